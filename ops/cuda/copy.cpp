// Mirrors ATen/native/cuda/Copy.cu (copy_ within a device and across host and devices),
// TensorConversions (_to_copy), FillKernel.cu, TensorFactories (zeros_like, ones_like),
// Shape.cu (cat), TriangularOps.cu (triu) and slice_backward on CUDA: the kernels of the Defs of
// ops/copy_defs.h, registered from them (ops/structured.h). A copy between the host and a device
// goes through the allocators' copy functions (synchronous: the host side is readable or
// reusable when they return).
#include <cuda_runtime_api.h>

#include <algorithm>

#include "engine/cuda/cuda_exception.h"
#include "engine/cuda/cuda_guard.h"
#include "engine/cuda/cuda_stream.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/copy.h"
#include "ops/copy_defs.h"
#include "ops/cpu_utils.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// copy_'s and _to_copy's backend: their tensors may be on the host or on several devices, so the
// kernels put their own device guards.
struct CrossDeviceBackend {
  static Tensor empty(const TensorMeta& m) {
    if (!m.device.is_cuda()) return empty_from(m);
    cuda::CUDAGuard guard(m.device);
    return empty_from(m);
  }
  template <class F>
  static void run(const Tensor&, const F& kernel) { kernel(); }
};

// The bytes of a contiguous CUDA tensor into out (as big, on the host or another device).
void transfer(const Tensor& contiguous_src, const Tensor& out) {
  const size_t nbytes = static_cast<size_t>(contiguous_src.nbytes());
  if (nbytes == 0) return;
  const Device from = contiguous_src.device(), to = out.device();
  if (to.is_cpu()) {
    get_allocator(from)->copy_to_host(out.data_ptr(), contiguous_src.data_ptr(), nbytes);
    return;
  }
  // device to device: after the source's queued work, before the destination's next work
  cuda::getCurrentCUDAStream(from.index).synchronize();
  REMAT_CUDA_CHECK(cudaMemcpyPeer(out.data_ptr(), to.index, contiguous_src.data_ptr(), from.index, nbytes));
}
Tensor transfer(const Tensor& contiguous_src, const Device& to) {
  Tensor out = make_empty(contiguous_src.sizes(), contiguous_src.dtype(), to);
  transfer(contiguous_src, out);
  return out;
}

// The Defs' kernels (TORCH_IMPL_FUNC): out has the meta function's geometry (out is self for the
// in-place ops) and is not empty; the device guard is out's (structured::CUDABackend).

template <int kValue>
void fill_value_impl(const char*, const Tensor& out, const Tensor&) { fill_cuda(out, kValue); }
void fill_impl(const char*, const Tensor& out, const Tensor&, double value) { fill_cuda(out, value); }

void copy_impl(const char*, const Tensor& self, const Tensor&, const Tensor& src) {
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
}

void clone_impl(const char*, const Tensor& out, const Tensor& self) { copy_into_cuda(out, self); }

// Converted on self's device (to_copy_staging), then moved to out's.
void to_copy_impl(const char*, const Tensor& out, const Tensor& self, std::optional<ScalarType>,
                  std::optional<Device>) {
  if (out.is_meta()) return;
  cuda::CUDAGuard guard(self.device());
  const Tensor converted = to_copy_staging(out, self);
  copy_into_cuda(converted, self);
  if (!converted.is_same(out)) transfer(converted, out);
}

void cat_impl(const char* op, const Tensor& out, const std::vector<Tensor>& tensors, int64_t dim) {
  dim = maybe_wrap_dim(dim, tensors[0].dim(), op);
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    Shape sizes = out.sizes();
    sizes[dim] = t.sizes()[dim];
    Tensor part = make_alias(out, sizes, out.strides(), offset * out.strides()[dim]);
    copy_into_cuda(part, t);
    offset += t.sizes()[dim];
  }
}

void triu_impl(const char*, const Tensor& out, const Tensor& self, int64_t diagonal) {
  copy_into_cuda(out, self);
  const int64_t rows = self.sizes()[self.dim() - 2], cols = self.sizes()[self.dim() - 1];
  const int64_t batch = self.numel() / std::max<int64_t>(rows * cols, 1);
  kc::triu_(out.dtype(), out.data_ptr(), batch, rows, cols, diagonal, cuda_stream(out.device()));
}

void slice_backward_impl(const char* op, const Tensor& out, const Tensor& grad, const Shape& input_sizes, int64_t dim,
                         int64_t start, int64_t, int64_t step) {
  fill_cuda(out, 0.0);
  copy_into_cuda(slice_backward_part(op, out, grad, input_sizes, dim, start, step), grad);
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  using structured::CUDABackend;
  using structured::impl;
  impl<structured_zero_, CUDABackend, &fill_value_impl<0>>(m);
  impl<structured_fill_, CUDABackend, &fill_impl>(m);
  impl<structured_copy_, CrossDeviceBackend, &copy_impl>(m);
  impl<structured_clone, CUDABackend, &clone_impl>(m);
  impl<structured__to_copy, CrossDeviceBackend, &to_copy_impl>(m);
  impl<structured_cat, CUDABackend, &cat_impl>(m);
  impl<structured_triu, CUDABackend, &triu_impl>(m);
  impl<structured_zeros_like, CUDABackend, &fill_value_impl<0>>(m);
  impl<structured_ones_like, CUDABackend, &fill_value_impl<1>>(m);
  impl<structured_slice_backward, CUDABackend, &slice_backward_impl>(m);
}

}  // namespace remat::ops
