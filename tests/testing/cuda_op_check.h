// Mirrors PyTorch's test_ops.py TestCommon.test_compare_cpu (an op on the device against the same
// op on the CPU, over OpInfo sample inputs): runs an op on CPU inputs and on CUDA copies of them
// (the same values in the same memory layout), compares the outputs within the dtype's tolerance
// of tests/testing/cuda.h, then runs backward on both with the same upstream gradients and
// compares the gradients of every input. A table of ops then needs a few lines per op.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "remat.h"
#include "tests/testing/cuda.h"

namespace remat::testing {

// How an input's values sit in memory. Every layout holds the same logical values.
enum class Layout {
  Contiguous,  // row-major
  Transposed,  // the last two dims swapped in memory (needs 2 dims)
  Strided,     // every other element of a twice-as-long last dim (needs 1 dim)
  Offset,      // one element past a 16-byte boundary: misaligned for vector loads
  Expanded,    // dim 0 broadcast from size 1 with stride 0 (needs shape[0] > 1); its gradient is a sum
};
inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contiguous: return "contiguous";
    case Layout::Transposed: return "transposed";
    case Layout::Strided: return "strided";
    case Layout::Offset: return "offset";
    case Layout::Expanded: return "expanded";
  }
  return "?";
}
inline const std::vector<Layout>& all_layouts() {
  static const std::vector<Layout> v = {Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::Offset,
                                        Layout::Expanded};
  return v;
}
// Whether a layout can hold a tensor of this shape (else a sweep leaves the pair out).
inline bool layout_applies(Layout l, const Shape& s) {
  switch (l) {
    case Layout::Transposed: return s.size() >= 2;
    case Layout::Strided: return !s.empty();
    case Layout::Expanded: return !s.empty() && s[0] > 1;
    default: return true;
  }
}

// The floating dtypes every CUDA kernel supports.
inline const std::vector<ScalarType>& floating_types() {
  static const std::vector<ScalarType> v = {kFloat, kDouble, kBFloat16, kHalf};
  return v;
}

// Shapes whose element counts are not multiples of a warp, a block, or a vector width: 1, 31,
// 33, 1023, 1025, 4097 elements; two 2-d ones (for the transposed layout); and two empty ones.
inline const std::vector<Shape>& element_shapes() {
  static const std::vector<Shape> v = {{1}, {31}, {33}, {1023}, {1025}, {4097}, {33, 31}, {3, 1025}, {0}, {5, 0}};
  return v;
}
// [rows, cols] for row-wise ops (softmax, norms, reductions, cross_entropy, embedding): rows of
// 1, 31-33 (about a warp) and 1023-1025 (about the 1024 where kernels switch from a warp to a
// block per row) and 4097 columns; row counts that leave row groups of a block idle; empty.
inline const std::vector<Shape>& row_shapes() {
  static const std::vector<Shape> v = {{1, 1},    {33, 1},    {7, 31},   {33, 32},   {1, 33},  {9, 1023},
                                       {4, 1024}, {5, 1025},  {2, 4097}, {0, 33},    {3, 0}};
  return v;
}

// Which tolerance of tests/testing/cuda.h a result gets.
enum class Kind { Elementwise, Reduction };
inline Tolerance tolerance(Kind k, ScalarType t) {
  return k == Kind::Elementwise ? elementwise_tolerance(t) : reduction_tolerance(t);
}

// One input of an op check: random values of a shape in a layout, or a fixed CPU tensor.
struct Arg {
  Shape shape;
  double lo = 0, hi = 0;            // uniform in [lo, hi); lo == hi: standard normal
  Layout layout = Layout::Contiguous;
  std::optional<ScalarType> dtype;  // default: the check's dtype
  bool grad = true;                 // a floating random input is a leaf that requires grad
  Tensor value;                     // if defined: this tensor (indices, targets, masks), never a leaf

  Arg in(Layout l) const {
    Arg a = *this;
    a.layout = l;
    return a;
  }
  Arg of(ScalarType t) const {
    Arg a = *this;
    a.dtype = t;
    return a;
  }
  Arg no_grad() const {
    Arg a = *this;
    a.grad = false;
    return a;
  }
};
inline Arg arg(Shape shape, double lo = 0, double hi = 0) {
  Arg a;
  a.shape = std::move(shape);
  a.lo = lo;
  a.hi = hi;
  return a;
}
inline Arg fixed(Tensor value) {
  Arg a;
  a.shape = value.sizes();
  a.value = std::move(value);
  a.grad = false;
  return a;
}

// Random class indices in [0, n) of a shape (a Long CPU tensor).
inline Tensor random_indices(const Shape& shape, int64_t n, uint64_t seed) {
  Tensor u = random_cpu(shape, kDouble, seed, 0.0, static_cast<double>(n));
  std::vector<double> v = u.to_vector();
  for (double& x : v) x = std::floor(x);
  return from_vector(v, shape, kLong);
}

// A random Bool CPU tensor (about half true).
inline Tensor random_mask(const Shape& shape, uint64_t seed) {
  std::vector<double> v = random_cpu(shape, kDouble, seed).to_vector();
  for (double& x : v) x = x > 0 ? 1 : 0;
  return from_vector(v, shape, kBool);
}

namespace detail_check {

// The base a layout views, and the view.
inline Shape base_shape(Layout l, const Shape& s) {
  Shape b = s;
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  switch (l) {
    case Layout::Transposed: std::swap(b[b.size() - 1], b[b.size() - 2]); break;
    case Layout::Strided: b.back() *= 2; break;
    case Layout::Offset: b = {n + 1}; break;
    case Layout::Expanded: b[0] = 1; break;
    case Layout::Contiguous: break;
  }
  return b;
}
inline Tensor view_of(Layout l, const Tensor& base, const Shape& s) {
  switch (l) {
    case Layout::Transposed: return base.transpose(-1, -2);
    case Layout::Strided: return base.slice(-1, 0, base.sizes().back(), 2);
    case Layout::Offset: return base.slice(0, 1, base.numel()).view(s);
    case Layout::Expanded: return base.expand(s);
    case Layout::Contiguous: break;
  }
  return base;
}

inline std::string describe(const Tensor& t) {
  std::ostringstream os;
  os << toString(t.dtype()) << str(t.sizes()) << " strides " << str(t.strides());
  return os.str();
}

// "" when b (CUDA) matches a (CPU): defined alike, on CUDA, same dtype, shape and values.
inline std::string compare_one(const Tensor& cpu, const Tensor& gpu, Tolerance tol) {
  if (cpu.defined() != gpu.defined()) {
    return std::string("defined on ") + (cpu.defined() ? "CPU" : "CUDA") + " only";
  }
  if (!cpu.defined()) return "";
  if (!gpu.is_cuda()) return "the CUDA result is not on CUDA";
  // Integer and Bool results are exact.
  const Tolerance t = isFloatingType(cpu.dtype()) ? tol : Tolerance{0, 0};
  return compare(gpu, cpu, t);
}

}  // namespace detail_check

// Options of one check.
struct CheckOptions {
  Tolerance tol;       // outputs
  Tolerance grad_tol;  // input gradients
  bool backward = true;
  uint64_t seed = 1;
};

// Runs fn on CPU inputs built from args and on CUDA copies in the same layouts. "" when the
// outputs agree within opts.tol and (opts.backward, and some output requires grad) the
// gradients of every leaf input agree within opts.grad_tol; else what disagreed.
inline std::string cuda_vs_cpu(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                               const std::vector<Arg>& args, ScalarType dtype, const CheckOptions& opts) {
  std::vector<Tensor> cpu_in, gpu_in, cpu_leaves, gpu_leaves;
  std::vector<size_t> leaf_arg;
  for (size_t i = 0; i < args.size(); ++i) {
    const Arg& a = args[i];
    if (a.value.defined()) {
      cpu_in.push_back(a.value);
      gpu_in.push_back(a.value.to(cuda0()));
      continue;
    }
    const ScalarType dt = a.dtype.value_or(dtype);
    Tensor cb = random_cpu(detail_check::base_shape(a.layout, a.shape), dt, opts.seed * 7919 + i, a.lo, a.hi);
    Tensor gb = cb.to(cuda0());
    if (opts.backward && a.grad && isFloatingType(dt)) {
      cb.requires_grad_();
      gb.requires_grad_();
      cpu_leaves.push_back(cb);
      gpu_leaves.push_back(gb);
      leaf_arg.push_back(i);
    }
    cpu_in.push_back(detail_check::view_of(a.layout, cb, a.shape));
    gpu_in.push_back(detail_check::view_of(a.layout, gb, a.shape));
    if (cpu_in.back().sizes() != a.shape) return "test bug: the " + std::string(layout_name(a.layout)) + " view has shape " + str(cpu_in.back().sizes());
  }
  const std::vector<Tensor> cpu_out = fn(cpu_in), gpu_out = fn(gpu_in);
  if (cpu_out.size() != gpu_out.size()) return "different numbers of outputs";
  for (size_t k = 0; k < cpu_out.size(); ++k) {
    std::string r = detail_check::compare_one(cpu_out[k], gpu_out[k], opts.tol);
    if (!r.empty()) return "output " + std::to_string(k) + " (" + detail_check::describe(cpu_out[k]) + "): " + r;
  }
  if (!opts.backward || cpu_leaves.empty()) return "";
  std::vector<Tensor> cpu_roots, gpu_roots, cpu_g, gpu_g;
  for (size_t k = 0; k < cpu_out.size(); ++k) {
    if (!cpu_out[k].defined() || !cpu_out[k].requires_grad()) continue;
    if (!gpu_out[k].requires_grad()) return "output " + std::to_string(k) + " requires grad on the CPU only";
    Tensor g = random_cpu(cpu_out[k].sizes(), cpu_out[k].dtype(), opts.seed * 7919 + 1000 + k);
    cpu_roots.push_back(cpu_out[k]);
    gpu_roots.push_back(gpu_out[k]);
    cpu_g.push_back(g);
    gpu_g.push_back(g.to(cuda0()));
  }
  if (cpu_roots.empty()) {
    // A floating output that no gradient reaches means the check would compare nothing.
    for (const Tensor& t : cpu_out)
      if (t.defined() && isFloatingType(t.dtype())) return "backward asked for, but no output requires grad";
    return "";  // integer or Bool outputs only: nothing to differentiate
  }
  const std::vector<Tensor> cpu_grads = autograd::grad(cpu_roots, cpu_leaves, cpu_g, false, false, true);
  const std::vector<Tensor> gpu_grads = autograd::grad(gpu_roots, gpu_leaves, gpu_g, false, false, true);
  for (size_t j = 0; j < cpu_grads.size(); ++j) {
    std::string r = detail_check::compare_one(cpu_grads[j], gpu_grads[j], opts.grad_tol);
    if (!r.empty()) {
      const Arg& a = args[leaf_arg[j]];
      return "gradient of input " + std::to_string(leaf_arg[j]) + " (" + layout_name(a.layout) + " " + str(a.shape) +
             "): " + r;
    }
  }
  return "";
}

// The same for an op with one output.
inline std::string cuda_vs_cpu(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                               const std::vector<Arg>& args, ScalarType dtype, const CheckOptions& opts) {
  return cuda_vs_cpu([&fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in)}; }, args, dtype,
                     opts);
}

// Options for a check of kind k in dtype t: the forward tolerance of k, and the gradients' tolerance
// of grad_kind.
inline CheckOptions options(Kind k, ScalarType t, Kind grad_kind, bool backward = true, uint64_t seed = 1) {
  return CheckOptions{tolerance(k, t), tolerance(grad_kind, t), backward, seed};
}

// Whether the gradient of some random input of args is a sum over broadcast elements: it is
// expanded, or it has another shape than the case (a broadcast operand, a weight).
inline bool sums_gradients(const std::vector<Arg>& args, const Shape& case_shape) {
  for (const Arg& a : args)
    if (!a.value.defined() && (a.layout == Layout::Expanded || a.shape != case_shape)) return true;
  return false;
}

// One case of a sweep: what an op is run on.
struct Case {
  ScalarType dtype;
  Shape shape;
  Layout layout;
};
inline std::string describe(const Case& c) {
  return std::string(toString(c.dtype)) + " " + str(c.shape) + " " + layout_name(c.layout);
}

// Every (dtype, shape, layout) of the lists where the layout applies to the shape.
inline std::vector<Case> cases(const std::vector<ScalarType>& dtypes, const std::vector<Shape>& shapes,
                               const std::vector<Layout>& layouts = all_layouts()) {
  std::vector<Case> out;
  for (ScalarType t : dtypes)
    for (const Shape& s : shapes)
      for (Layout l : layouts)
        if (layout_applies(l, s)) out.push_back(Case{t, s, l});
  return out;
}

// One CHECK per case: fn on make_args(case), forward of kind k, and backward (if asked) with
// the gradient tolerance of k, or of a reduction where a gradient sums (sums_gradients).
template <class Fn, class MakeArgs>
void check_cases(const char* name, const Fn& fn, const std::vector<Case>& cs, const MakeArgs& make_args, Kind k,
                 bool backward = true) {
  uint64_t seed = 0;
  for (const Case& c : cs) {
    const std::vector<Arg> args = make_args(c);
    const Kind gk = sums_gradients(args, c.shape) ? Kind::Reduction : k;
    INFO(name << " on " << describe(c));
    CHECK(cuda_vs_cpu(fn, args, c.dtype, options(k, c.dtype, gk, backward, ++seed)) == "");
  }
}

}  // namespace remat::testing
