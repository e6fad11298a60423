// Mirrors ATen/native/Copy.cpp, TensorConversions.cpp (_to_copy), Fill.cpp, TensorFactories.cpp
// (zeros_like, ones_like), TensorShape.cpp (cat, slice_backward), TriangularOps.cpp (triu) and
// the composite contiguous: the meta functions and CPU kernels of the Defs of ops/copy_defs.h,
// from which the schemas and the CPU and Meta registrations come (ops/structured.h).
#include <algorithm>
#include <cstring>

#include "engine/dispatch/library.h"
#include "kernels/cpu/pointwise.h"
#include "ops/composite.h"
#include "ops/copy_defs.h"
#include "ops/copy_kernels.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/meta.h"
#include "ops/functions.h"
#include "ops/op_utils.h"
#include "ops/structured.h"

namespace remat::ops {

// Meta functions, shared by every backend (declared in ops/meta.h).

void check_triu(const Tensor& self) {
  REMAT_CHECK(self.dim() >= 2, "aten::triu: input tensor must have at least 2 dimensions (got shape ", self.sizes(), ")");
}

void check_copy(const Tensor& self, const Tensor& src) {
  check_no_internal_overlap("aten::copy_", self);
  Shape b = broadcast_shapes("aten::copy_", self.sizes(), src.sizes());
  REMAT_CHECK(b == self.sizes(), "aten::copy_: source of shape ", src.sizes(),
              " cannot be broadcast to the destination's shape ", self.sizes());
}

TensorMeta cat_meta(const std::vector<Tensor>& tensors, int64_t dim) {
  REMAT_CHECK(!tensors.empty(), "aten::cat: expected a non-empty list of Tensors");
  const Tensor& first = tensors[0];
  REMAT_CHECK(first.dim() > 0, "aten::cat: zero-dimensional tensor (at position 0) cannot be concatenated");
  dim = maybe_wrap_dim(dim, first.dim(), "aten::cat");
  Shape sizes = first.sizes();
  sizes[dim] = 0;
  ScalarType dtype = first.dtype();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    REMAT_CHECK(t.dim() == first.dim(), "aten::cat: Tensors must have same number of dimensions: got ",
                first.dim(), " and ", t.dim(), " (tensor ", i, ")");
    REMAT_CHECK(t.device() == first.device(), "aten::cat: Expected all tensors to be on the same device, but found ",
                first.device(), " and ", t.device());
    for (int64_t d = 0; d < t.dim(); ++d) {
      REMAT_CHECK(d == dim || t.sizes()[d] == first.sizes()[d], "aten::cat: Sizes of tensors must match except in dimension ",
                  dim, ". Expected size ", first.sizes()[d], " but got size ", t.sizes()[d], " for tensor number ", i,
                  " in the list.");
    }
    sizes[dim] += t.sizes()[dim];
    dtype = promoteTypes(dtype, t.dtype());
  }
  return {sizes, dtype, first.device()};
}

// The part of slice_backward's output the gradient is written into (every backend's; declared in
// ops/meta.h).
Tensor slice_backward_part(const char* op, const Tensor& out, const Tensor& grad, const Shape& input_sizes,
                           int64_t dim, int64_t start, int64_t step) {
  dim = maybe_wrap_dim(dim, static_cast<int64_t>(input_sizes.size()), op);
  const int64_t size = input_sizes[dim];
  if (start < 0) start += size;
  start = std::clamp<int64_t>(start, 0, size);
  Shape strides = out.strides();
  strides[dim] *= step;
  return make_alias(out, grad.sizes(), strides, start * out.strides()[dim]);
}

namespace {

namespace cpu = kernels::cpu;

void fill_raw(const Tensor& self, double value) {
  if (self.is_meta() || self.numel() == 0) return;
  auto loop = make_loop(self, {});
  REMAT_DISPATCH_ALL_TYPES(self.dtype(), "aten::fill_", [&] {
    cpu::fill_kernel(loop, self.data_ptr<scalar_t>(), static_cast<scalar_t>(value));
  });
}

// The Meta kernel's (structured::impl_meta): what the backends stage.
void to_copy_meta_staging(const Tensor& out, const Tensor& self, std::optional<ScalarType>, std::optional<Device>) {
  const Tensor converted = to_copy_staging(out, self);
}

void triu_impl(const char* op, const Tensor& out, const Tensor& self, int64_t diagonal) {
  copy_into_cpu(out, self);
  int64_t rows = self.sizes()[self.dim() - 2], cols = self.sizes()[self.dim() - 1];
  int64_t batch = self.numel() / std::max<int64_t>(rows * cols, 1);
  REMAT_DISPATCH_ALL_TYPES(self.dtype(), op, [&] {
    scalar_t* p = out.data_ptr<scalar_t>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols && j - i < diagonal; ++j) p[(b * rows + i) * cols + j] = scalar_t(0);
  });
}

// cat of contiguous inputs of out's dtype into a contiguous out (split's backward joining q's, k's
// and v's gradients): row by row of the dims outside dim, each input's part of the row in turn, so
// out is written once, in order, as ATen's cat_serial_kernel (cpu/CatKernel.cpp). An input at a
// time over all of out ran at 1.18x PyTorch's time (f32, [8, 128, 3 x 256], 1 thread). False for
// any other layout (the strided copies then).
bool cat_contiguous_cpu(const Tensor& out, const std::vector<Tensor>& tensors, int64_t dim) {
  if (!out.is_contiguous()) return false;
  for (const Tensor& t : tensors)
    if (!t.is_contiguous() || t.dtype() != out.dtype() || !t.device().is_cpu()) return false;
  const int64_t e = static_cast<int64_t>(elementSize(out.dtype()));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out.sizes()[d];
  for (int64_t d = dim + 1; d < out.dim(); ++d) inner *= out.sizes()[d];
  std::vector<std::pair<const char*, int64_t>> parts;  // each input's data and bytes a row
  for (const Tensor& t : tensors)
    if (t.numel() > 0) parts.emplace_back(static_cast<const char*>(t.data_ptr()), t.sizes()[dim] * inner * e);
  const int64_t row_elements = out.sizes()[dim] * inner;
  char* o = static_cast<char*>(out.data_ptr());
  cpu::parallel_for(0, outer, std::max<int64_t>(1, cpu::kGrainSize / std::max<int64_t>(row_elements, 1)),
                    [&](int64_t b, int64_t end) {
                      for (int64_t r = b; r < end; ++r) {
                        char* dst = o + r * row_elements * e;
                        for (const auto& [src, bytes] : parts) {
                          cpu::detail::copy_bytes(dst, src + r * bytes, static_cast<size_t>(bytes));
                          dst += bytes;
                        }
                      }
                    });
  return true;
}

// What ops/copy_kernels.h's kernels and registration need of the CPU.
struct CPUCopyOps {
  using Backend = structured::CPUBackend;
  static bool cat_contiguous(const Tensor& out, const std::vector<Tensor>& tensors, int64_t dim) {
    return cat_contiguous_cpu(out, tensors, dim);
  }
  static void fill(const Tensor& out, double value) { fill_raw(out, value); }
  static void copy_into(const Tensor& out, const Tensor& src) { copy_into_cpu(out, src); }
  // device -> host: staged on the host first
  static bool copy_across(const Tensor& self, const Tensor& src) {
    if (!src.device().is_cuda()) return false;
    Tensor staged = make_empty(src.sizes(), src.dtype(), Device{kCPU});
    get_allocator(src.device())->copy_to_host(staged.data_ptr(), contiguous_cpu(src).data_ptr(),
                                              static_cast<size_t>(src.nbytes()));
    copy_into_cpu(self, staged);
    return true;
  }
  // converted on the host, moved to out's device through its allocator
  static void move_out(const Tensor& converted, const Tensor& out) {
    get_allocator(out.device())->copy_from_host(out.data_ptr(), converted.data_ptr(), static_cast<size_t>(out.nbytes()));
  }
  static constexpr auto triu = &triu_impl;
};

Tensor contiguous_composite(const Tensor& self) { return self.is_contiguous() ? self : clone(self); }

}  // namespace

// The schemas and the Meta kernels, from the Defs (ops/copy_defs.h).
REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_copy_def([&](auto def) { structured::define<typename decltype(def)::type>(m, {}); });
  impl_composite(m, structured_contiguous::name, REMAT_FN(contiguous_composite));
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  using structured::impl_meta;
  impl_meta<structured_zero_>(m);
  impl_meta<structured_fill_>(m);
  impl_meta<structured_copy_>(m);
  impl_meta<structured_clone>(m);
  impl_meta<structured__to_copy, &to_copy_meta_staging>(m);
  impl_meta<structured_cat>(m);
  impl_meta<structured_triu>(m);
  impl_meta<structured_zeros_like>(m);
  impl_meta<structured_ones_like>(m);
  impl_meta<structured_slice_backward>(m);
}

REMAT_LIBRARY_IMPL(aten, CPU, m) { impl_copy_kernels<CPUCopyOps>(m); }

}  // namespace remat::ops
