// Mirrors torchgen's generated NativeMetaFunctions.h for Copy.cpp, Fill.cpp,
// TensorConversions.cpp, TensorFactories.cpp, TensorShape.cpp and TriangularOps.cpp's ops
// (zero_, fill_, copy_, clone, contiguous, _to_copy, cat, triu, zeros_like, ones_like,
// slice_backward): their Defs (ops/structured.h: name, schema, C++ signature, meta function), so
// that each exists once. The kernels are ops/copy_kernels.h's, over what ops/copy.cpp (CPU) and
// ops/cuda/copy.cpp (CUDA) give it; contiguous is a composite (ops/copy.cpp).
//
// Within one device the copies allocate their outputs alone (copy_into_cpu and copy_into_cuda
// read strided, broadcast and other-dtype inputs as they are: cat on a strided input copies
// nothing first). _to_copy to another device converts on the source's device first: that
// staging tensor is declared once, to_copy_staging, which every backend's kernel and the Meta
// kernel run (on Meta the source and the output share the device: nothing is staged).
#pragma once

#include <optional>
#include <vector>

#include "ops/autograd/derivative_rules.h"
#include "ops/meta.h"
#include "ops/op_utils.h"
#include "ops/structured.h"

namespace remat::ops {

// The output every backend allocates for an op that keeps self's geometry.
inline TensorMeta like(const Tensor& self) { return {self.sizes(), self.dtype(), self.device()}; }

// A Meta tensor has no data to copy to another device.
inline void check_no_copy_out_of_meta(const char* op, const Tensor& src, const Device& dst) {
  REMAT_CHECK(!src.is_meta() || dst.is_meta(), op, ": Cannot copy out of meta tensor; no data! (a meta tensor of shape ",
              src.sizes(), " copied to ", dst, ")");
}

// A copy from or to a complex dtype keeps the dtype (remat converts no complex values: PyTorch
// would drop the imaginary part with a warning, or make one of zeros).
inline void check_complex_copy(const char* op, const Tensor& src, ScalarType dst) {
  REMAT_CHECK((!isComplexType(src.dtype()) && !isComplexType(dst)) || src.dtype() == dst, op,
              ": not implemented for '", toString(isComplexType(src.dtype()) ? src.dtype() : dst), "' to or from '",
              toString(isComplexType(src.dtype()) ? dst : src.dtype()),
              "' (remat copies complex tensors only to their own dtype)");
}

// _to_copy's kernels convert self on its own device into this tensor: out itself when out is on
// that device, else a new tensor there whose bytes are then moved to out.
inline Tensor to_copy_staging(const Tensor& out, const Tensor& self) {
  return out.device() == self.device() ? out : make_empty(self.sizes(), out.dtype(), self.device());
}

// ---- in place ----
struct structured_zero_ {
  using Sig = Tensor(const Tensor&);
  static constexpr const char* inplace_name = "aten::zero_";
  static constexpr const char* inplace_schema = "(Tensor(a!) self) -> Tensor(a!)";
  static void inplace_meta(const char*, const Tensor&) {}  // an expanded self is fine: zero_ is idempotent
  // self = 0: nothing flows to self's old value
  static autograd::Derivative inplace_derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G { return {zeros_like(c.grad())}; });
  }
};
struct structured_fill_ {
  using Sig = Tensor(const Tensor&, double);
  static constexpr const char* inplace_name = "aten::fill_";
  static constexpr const char* inplace_schema = "(Tensor(a!) self, float value) -> Tensor(a!)";
  static void inplace_meta(const char*, const Tensor&, double) {}
  // self = value
  static autograd::Derivative inplace_derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G { return {zeros_like(c.grad())}; });
  }
};
struct structured_copy_ {
  using Sig = Tensor(const Tensor&, const Tensor&);
  static constexpr const char* inplace_name = "aten::copy_";
  static constexpr const char* inplace_schema = "(Tensor(a!) self, Tensor src) -> Tensor(a!)";
  static constexpr bool supports_complex = true;  // complex to the same complex dtype
  static void inplace_meta(const char* op, const Tensor& self, const Tensor& src) {
    check_complex_copy(op, src, self.dtype());
    check_copy(self, src);
    check_no_copy_out_of_meta(op, src, self.device());
  }
  // self = src (broadcast to self's shape, in self's dtype)
  static autograd::Derivative inplace_derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G {
      return {zeros_like(c.grad()), if_needed(c, 1, [&] { return sum_to(c.grad(), c.meta(1)); })};
    });
  }
};

// ---- copies, conversions, constructors from a tensor ----
struct structured_clone {
  using Sig = Tensor(const Tensor&);
  static constexpr const char* name = "aten::clone";
  static constexpr const char* schema = "(Tensor self) -> Tensor";
  static constexpr bool supports_complex = true;
  static TensorMeta meta(const char*, const Tensor& self) { return like(self); }
  // out = self (a copy)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G { return {c.grad()}; });
  }
};
struct structured_contiguous {  // composite: self, or a clone
  using Sig = Tensor(const Tensor&);
  static constexpr const char* name = "aten::contiguous";
  static constexpr const char* schema = "(Tensor(a) self) -> Tensor(a)";
};
struct structured__to_copy {
  using Sig = Tensor(const Tensor&, std::optional<ScalarType>, std::optional<Device>);
  static constexpr const char* name = "aten::_to_copy";
  static constexpr const char* schema = "(Tensor self, ScalarType? dtype=None, Device? device=None) -> Tensor";
  static constexpr bool supports_complex = true;  // complex to the same complex dtype (a move)
  static TensorMeta meta(const char* op, const Tensor& self, std::optional<ScalarType> dtype,
                         std::optional<Device> device) {
    check_complex_copy(op, self, dtype.value_or(self.dtype()));
    const Device dev = device.value_or(self.device());
    check_no_copy_out_of_meta(op, self, dev);
    return {self.sizes(), dtype.value_or(self.dtype()), dev};
  }
  // out = self in dtype on device: the gradient goes back to self's dtype and device
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G {
      const InputMetadata& m = c.meta(0);
      Tensor g = c.grad();
      return {_to_copy(g, g.dtype() == m.dtype ? std::nullopt : std::optional<ScalarType>(m.dtype),
                       g.device() == m.device ? std::nullopt : std::optional<Device>(m.device))};
    });
  }
};
struct structured_cat {
  using Sig = Tensor(const std::vector<Tensor>&, int64_t);
  static constexpr const char* name = "aten::cat";
  static constexpr const char* schema = "(Tensor[] tensors, int dim=0) -> Tensor";
  static TensorMeta meta(const char*, const std::vector<Tensor>& tensors, int64_t dim) { return cat_meta(tensors, dim); }
  // out = tensors[0], tensors[1], ... laid end to end along dim: each gets its slice of the gradient
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G {
      G out;
      int64_t dim = c.integer(1), offset = 0;
      size_t n = c.list_size(0);
      int64_t ndim = static_cast<int64_t>(c.meta(0, 0).shape.size());
      dim = dim < 0 ? dim + ndim : dim;
      for (size_t k = 0; k < n; ++k) {
        int64_t len = c.meta(0, k).shape[dim];
        out.push_back(c.needs(0, k) ? slice(c.grad(), dim, offset, offset + len, 1) : Tensor());
        offset += len;
      }
      return out;
    });
  }
};
struct structured_triu {
  using Sig = Tensor(const Tensor&, int64_t);
  static constexpr const char* name = "aten::triu";
  static constexpr const char* schema = "(Tensor self, int diagonal=0) -> Tensor";
  static TensorMeta meta(const char*, const Tensor& self, int64_t) {
    check_triu(self);
    return like(self);
  }
  // out = self above the diagonal, 0 below
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G { return {triu(c.grad(), c.integer(1))}; });
  }
};
struct structured_zeros_like {
  using Sig = Tensor(const Tensor&);
  static constexpr const char* name = "aten::zeros_like";
  static constexpr const char* schema = "(Tensor self) -> Tensor";
  static TensorMeta meta(const char*, const Tensor& self) { return like(self); }
  static autograd::Derivative derivative() { return autograd::non_differentiable(); }  // out = 0
};
struct structured_ones_like {
  using Sig = Tensor(const Tensor&);
  static constexpr const char* name = "aten::ones_like";
  static constexpr const char* schema = "(Tensor self) -> Tensor";
  static TensorMeta meta(const char*, const Tensor& self) { return like(self); }
  static autograd::Derivative derivative() { return autograd::non_differentiable(); }  // out = 1
};
struct structured_slice_backward {
  using Sig = Tensor(const Tensor&, const Shape&, int64_t, int64_t, int64_t, int64_t);
  static constexpr const char* name = "aten::slice_backward";
  static constexpr const char* schema =
      "(Tensor grad_output, int[] input_sizes, int dim, int start, int end, int step) -> Tensor";
  // (dim is checked here, so that the Meta kernel raises the backends' error)
  static TensorMeta meta(const char* op, const Tensor& grad, const Shape& input_sizes, int64_t dim, int64_t, int64_t,
                         int64_t) {
    maybe_wrap_dim(dim, static_cast<int64_t>(input_sizes.size()), op);
    return {input_sizes, grad.dtype(), grad.device()};
  }
  // out = zeros(input_sizes); out.slice(dim, start, end, step) = grad_output
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G { return {slice(c.grad(), c.integer(2), c.integer(3), c.integer(4), c.integer(5))}; });
  }
};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_copy_def(const F& f) {
  f(structured::DefTag<structured_zero_>{});
  f(structured::DefTag<structured_fill_>{});
  f(structured::DefTag<structured_copy_>{});
  f(structured::DefTag<structured_clone>{});
  f(structured::DefTag<structured_contiguous>{});
  f(structured::DefTag<structured__to_copy>{});
  f(structured::DefTag<structured_cat>{});
  f(structured::DefTag<structured_triu>{});
  f(structured::DefTag<structured_zeros_like>{});
  f(structured::DefTag<structured_ones_like>{});
  f(structured::DefTag<structured_slice_backward>{});
}

}  // namespace remat::ops
