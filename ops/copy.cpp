// Mirrors ATen/native/Copy.cpp, TensorConversions.cpp (_to_copy), Fill.cpp, TensorFactories.cpp
// (zeros_like, ones_like), TensorShape.cpp (cat, slice_backward) and TriangularOps.cpp (triu).
#include <cstring>

#include "engine/dispatch/library.h"
#include "kernels/cpu/pointwise.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/op_utils.h"

namespace remat::ops {
namespace {

namespace cpu = kernels::cpu;

Tensor meta_like(const Tensor& t, std::optional<ScalarType> dtype = std::nullopt) {
  return make_empty(t.sizes(), dtype.value_or(t.dtype()), Device{kMeta});
}

void fill_raw(const Tensor& self, double value) {
  if (self.is_meta() || self.numel() == 0) return;
  auto loop = make_loop(self, {});
  REMAT_DISPATCH_ALL_TYPES(self.dtype(), "aten::fill_", [&] {
    cpu::fill_kernel(loop, self.data_ptr<scalar_t>(), static_cast<scalar_t>(value));
  });
}

Tensor clone_cpu(const Tensor& self) {
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  copy_into_cpu(out, self);
  return out;
}

// Copies a contiguous tensor's bytes to another device through the allocators.
Tensor copy_to_device(const Tensor& contiguous_src, Device device) {
  Tensor out = make_empty(contiguous_src.sizes(), contiguous_src.dtype(), device);
  size_t nbytes = static_cast<size_t>(contiguous_src.nbytes());
  if (nbytes == 0) return out;
  if (contiguous_src.device().is_cpu()) {
    get_allocator(device)->copy_from_host(out.data_ptr(), contiguous_src.data_ptr(), nbytes);
  } else {
    get_allocator(contiguous_src.device())->copy_to_host(out.data_ptr(), contiguous_src.data_ptr(), nbytes);
  }
  return out;
}

Tensor to_copy_cpu(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  ScalarType dt = dtype.value_or(self.dtype());
  Device dev = device.value_or(self.device());
  if (dev.is_meta()) return make_empty(self.sizes(), dt, dev);
  Tensor converted = make_empty(self.sizes(), dt, self.device());
  copy_into_cpu(converted, self);
  if (dev == self.device()) return converted;
  return copy_to_device(converted, dev);
}

void check_no_copy_out_of_meta(const char* op, const Tensor& src, Device dst) {
  REMAT_CHECK(!src.is_meta() || dst.is_meta(), op, ": Cannot copy out of meta tensor; no data! (a meta tensor of shape ",
              src.sizes(), " copied to ", dst, ")");
}

Tensor to_copy_meta(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  check_no_copy_out_of_meta("aten::_to_copy", self, device.value_or(Device{kMeta}));
  return make_empty(self.sizes(), dtype.value_or(self.dtype()), device.value_or(Device{kMeta}));
}

void check_copy(const Tensor& self, const Tensor& src) {
  check_no_internal_overlap("aten::copy_", self);
  Shape b = broadcast_shapes("aten::copy_", self.sizes(), src.sizes());
  REMAT_CHECK(b == self.sizes(), "aten::copy_: source of shape ", src.sizes(),
              " cannot be broadcast to the destination's shape ", self.sizes());
}

Tensor copy__cpu(const Tensor& self, const Tensor& src) {
  check_copy(self, src);
  if (src.device() == self.device()) {
    copy_into_cpu(self, src);
  } else if (src.device().is_cuda()) {  // device -> host: stage on the host first
    Tensor staged = make_empty(src.sizes(), src.dtype(), Device{kCPU});
    get_allocator(src.device())->copy_to_host(staged.data_ptr(), contiguous_cpu(src).data_ptr(),
                                              static_cast<size_t>(src.nbytes()));
    copy_into_cpu(self, staged);
  } else {
    REMAT_CHECK(src.is_meta(), "aten::copy_: cannot copy from ", src.device(), " to ", self.device());
  }
  self.impl()->bump_version();
  return self;
}

Tensor copy__meta(const Tensor& self, const Tensor& src) {
  check_copy(self, src);
  check_no_copy_out_of_meta("aten::copy_", src, self.device());
  self.impl()->bump_version();
  return self;
}

Tensor fill__cpu(const Tensor& self, double value) {
  fill_raw(self, value);
  self.impl()->bump_version();
  return self;
}
Tensor zero__cpu(const Tensor& self) { return fill__cpu(self, 0.0); }

Tensor zeros_like_cpu(const Tensor& self) {
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  fill_raw(out, 0.0);
  return out;
}
Tensor ones_like_cpu(const Tensor& self) {
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  fill_raw(out, 1.0);
  return out;
}
Tensor like_meta(const Tensor& self) { return meta_like(self); }

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

Tensor cat_cpu(const std::vector<Tensor>& tensors, int64_t dim) {
  TensorMeta m = cat_meta(tensors, dim);
  dim = maybe_wrap_dim(dim, tensors[0].dim(), "aten::cat");
  Tensor out = empty_from(m);
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    Shape sizes = out.sizes();
    sizes[dim] = t.sizes()[dim];
    Tensor part = make_alias(out, sizes, out.strides(), offset * out.strides()[dim]);
    copy_into_cpu(part, t);
    offset += t.sizes()[dim];
  }
  return out;
}
Tensor cat_meta_kernel(const std::vector<Tensor>& tensors, int64_t dim) {
  TensorMeta m = cat_meta(tensors, dim);
  m.device = Device{kMeta};
  return empty_from(m);
}

Tensor triu_cpu(const Tensor& self, int64_t diagonal) {
  REMAT_CHECK(self.dim() >= 2, "aten::triu: input tensor must have at least 2 dimensions (got shape ", self.sizes(), ")");
  Tensor out = clone_cpu(self);
  int64_t rows = self.sizes()[self.dim() - 2], cols = self.sizes()[self.dim() - 1];
  int64_t batch = self.numel() / std::max<int64_t>(rows * cols, 1);
  REMAT_DISPATCH_ALL_TYPES(self.dtype(), "aten::triu", [&] {
    scalar_t* p = out.data_ptr<scalar_t>();
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols && j - i < diagonal; ++j) p[(b * rows + i) * cols + j] = scalar_t(0);
  });
  return out;
}
Tensor triu_meta(const Tensor& self, int64_t) {
  REMAT_CHECK(self.dim() >= 2, "aten::triu: input tensor must have at least 2 dimensions (got shape ", self.sizes(), ")");
  return meta_like(self);
}

Tensor slice_backward_cpu(const Tensor& grad, const Shape& input_sizes, int64_t dim, int64_t start, int64_t end,
                          int64_t step) {
  Tensor out = make_empty(input_sizes, grad.dtype(), grad.device());
  fill_raw(out, 0.0);
  dim = maybe_wrap_dim(dim, static_cast<int64_t>(input_sizes.size()), "aten::slice_backward");
  int64_t size = input_sizes[dim];
  if (start < 0) start += size;
  start = std::clamp<int64_t>(start, 0, size);
  Shape strides = out.strides();
  strides[dim] *= step;
  Tensor part = make_alias(out, grad.sizes(), strides, start * out.strides()[dim]);
  (void)end;
  copy_into_cpu(part, grad);
  return out;
}
Tensor slice_backward_meta(const Tensor& grad, const Shape& input_sizes, int64_t, int64_t, int64_t, int64_t) {
  return make_empty(input_sizes, grad.dtype(), Device{kMeta});
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("clone", REMAT_FN(clone_cpu));
  m.impl("_to_copy", REMAT_FN(to_copy_cpu));
  m.impl("copy_", REMAT_FN(copy__cpu));
  m.impl("fill_", REMAT_FN(fill__cpu));
  m.impl("zero_", REMAT_FN(zero__cpu));
  m.impl("zeros_like", REMAT_FN(zeros_like_cpu));
  m.impl("ones_like", REMAT_FN(ones_like_cpu));
  m.impl("cat", REMAT_FN(cat_cpu));
  m.impl("triu", REMAT_FN(triu_cpu));
  m.impl("slice_backward", REMAT_FN(slice_backward_cpu));
}

REMAT_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("clone", REMAT_FN(like_meta));
  m.impl("_to_copy", REMAT_FN(to_copy_meta));
  m.impl("copy_", REMAT_FN(copy__meta));
  m.impl("fill_", REMAT_FN(fill__cpu));  // fill_raw skips meta tensors
  m.impl("zero_", REMAT_FN(zero__cpu));
  m.impl("zeros_like", REMAT_FN(like_meta));
  m.impl("ones_like", REMAT_FN(like_meta));
  m.impl("cat", REMAT_FN(cat_meta_kernel));
  m.impl("triu", REMAT_FN(triu_meta));
  m.impl("slice_backward", REMAT_FN(slice_backward_meta));
}

}  // namespace remat::ops
