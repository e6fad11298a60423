// Mirrors ATen/native/cuda/Copy.cu (copy_ within a device and across host and devices),
// TensorConversions (_to_copy), FillKernel.cu, TensorFactories (zeros_like, ones_like),
// Shape.cu (cat), TriangularOps.cu (triu) and slice_backward on CUDA, with ops/copy.cpp's meta
// functions. A copy between the host and a device goes through the allocators' copy functions
// (synchronous: the host side is readable or reusable when they return).
#include <cuda_runtime_api.h>

#include <algorithm>

#include "engine/cuda/cuda_exception.h"
#include "engine/cuda/cuda_guard.h"
#include "engine/cuda/cuda_stream.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/copy.h"
#include "ops/cpu_utils.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

Tensor clone_cuda(const Tensor& self) {
  cuda::CUDAGuard guard(self.device());
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  copy_into_cuda(out, self);
  return out;
}

// Bytes of a contiguous CUDA tensor into a new tensor on `to` (the host or another device).
Tensor transfer(const Tensor& contiguous_src, const Device& to) {
  Tensor out = make_empty(contiguous_src.sizes(), contiguous_src.dtype(), to);
  const size_t nbytes = static_cast<size_t>(contiguous_src.nbytes());
  if (nbytes == 0) return out;
  const Device from = contiguous_src.device();
  if (to.is_cpu()) {
    get_allocator(from)->copy_to_host(out.data_ptr(), contiguous_src.data_ptr(), nbytes);
    return out;
  }
  // device to device: after the source's queued work, before the destination's next work
  cuda::getCurrentCUDAStream(from.index).synchronize();
  REMAT_CUDA_CHECK(cudaMemcpyPeer(out.data_ptr(), to.index, contiguous_src.data_ptr(), from.index, nbytes));
  return out;
}

Tensor to_copy_cuda(const Tensor& self, std::optional<ScalarType> dtype, std::optional<Device> device) {
  const ScalarType dt = dtype.value_or(self.dtype());
  const Device dev = device.value_or(self.device());
  if (dev.is_meta()) return make_empty(self.sizes(), dt, dev);
  cuda::CUDAGuard guard(self.device());
  Tensor converted = make_empty(self.sizes(), dt, self.device());
  copy_into_cuda(converted, self);
  if (dev == self.device()) return converted;
  return transfer(converted, dev);
}

Tensor copy__cuda(const Tensor& self, const Tensor& src) {
  check_copy(self, src);
  if (src.device() == self.device()) {
    copy_into_cuda(self, src);
  } else if (self.device().is_cpu() && src.is_cuda()) {  // device -> host: stage on the host first
    Tensor staged;
    {
      cuda::CUDAGuard guard(src.device());
      staged = transfer(contiguous_cuda(src), Device{kCPU});
    }
    copy_into_cpu(self, staged);
  } else if (self.is_cuda() && src.device().is_cpu()) {  // host -> device: stage on the device
    cuda::CUDAGuard guard(self.device());
    Tensor host = contiguous_cpu(src);
    Tensor staged = make_empty(host.sizes(), host.dtype(), self.device());
    if (host.nbytes() > 0)
      get_allocator(self.device())->copy_from_host(staged.data_ptr(), host.data_ptr(), static_cast<size_t>(host.nbytes()));
    copy_into_cuda(self, staged);
  } else if (self.is_cuda() && src.is_cuda()) {  // another device
    Tensor staged;
    {
      cuda::CUDAGuard guard(src.device());
      staged = transfer(contiguous_cuda(src), self.device());
    }
    copy_into_cuda(self, staged);
  } else {
    REMAT_CHECK(src.is_meta(), "aten::copy_: cannot copy from ", src.device(), " to ", self.device());
  }
  self.impl()->bump_version();
  return self;
}

Tensor fill__cuda(const Tensor& self, double value) {
  fill_cuda(self, value);
  self.impl()->bump_version();
  return self;
}
Tensor zero__cuda(const Tensor& self) { return fill__cuda(self, 0.0); }

Tensor zeros_like_cuda(const Tensor& self) {
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  fill_cuda(out, 0.0);
  return out;
}
Tensor ones_like_cuda(const Tensor& self) {
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  fill_cuda(out, 1.0);
  return out;
}

Tensor cat_cuda(const std::vector<Tensor>& tensors, int64_t dim) {
  TensorMeta m = cat_meta(tensors, dim);
  dim = maybe_wrap_dim(dim, tensors[0].dim(), "aten::cat");
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    Shape sizes = out.sizes();
    sizes[dim] = t.sizes()[dim];
    Tensor part = make_alias(out, sizes, out.strides(), offset * out.strides()[dim]);
    copy_into_cuda(part, t);
    offset += t.sizes()[dim];
  }
  return out;
}

Tensor triu_cuda(const Tensor& self, int64_t diagonal) {
  check_triu(self);
  Tensor out = clone_cuda(self);
  const int64_t rows = self.sizes()[self.dim() - 2], cols = self.sizes()[self.dim() - 1];
  const int64_t batch = self.numel() / std::max<int64_t>(rows * cols, 1);
  cuda::CUDAGuard guard(self.device());
  kc::triu_(out.dtype(), out.data_ptr(), batch, rows, cols, diagonal, cuda_stream(out.device()));
  return out;
}

Tensor slice_backward_cuda(const Tensor& grad, const Shape& input_sizes, int64_t dim, int64_t start, int64_t end,
                           int64_t step) {
  cuda::CUDAGuard guard(grad.device());
  Tensor out = make_empty(input_sizes, grad.dtype(), grad.device());
  fill_cuda(out, 0.0);
  dim = maybe_wrap_dim(dim, static_cast<int64_t>(input_sizes.size()), "aten::slice_backward");
  int64_t size = input_sizes[dim];
  if (start < 0) start += size;
  start = std::clamp<int64_t>(start, 0, size);
  Shape strides = out.strides();
  strides[dim] *= step;
  Tensor part = make_alias(out, grad.sizes(), strides, start * out.strides()[dim]);
  (void)end;
  copy_into_cuda(part, grad);
  return out;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("clone", REMAT_FN(clone_cuda));
  m.impl("_to_copy", REMAT_FN(to_copy_cuda));
  m.impl("copy_", REMAT_FN(copy__cuda));
  m.impl("fill_", REMAT_FN(fill__cuda));
  m.impl("zero_", REMAT_FN(zero__cuda));
  m.impl("zeros_like", REMAT_FN(zeros_like_cuda));
  m.impl("ones_like", REMAT_FN(ones_like_cuda));
  m.impl("cat", REMAT_FN(cat_cuda));
  m.impl("triu", REMAT_FN(triu_cuda));
  m.impl("slice_backward", REMAT_FN(slice_backward_cuda));
}

}  // namespace remat::ops
