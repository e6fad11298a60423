// Mirrors ATen/native/cuda/FusedSgdKernel.cu (_fused_sgd_kernel_cuda_): SGD's update of one
// parameter and its momentum buffer as one op on CUDA (kernels/cuda/sgd.h), so that optim::SGD
// with fused(true) runs on the device; ops/fused_sgd.cpp's checks and Meta kernel (which counts
// the same copy of a strided gradient).
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/sgd.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

Tensor fused_sgd_cuda(const Tensor& self, const Tensor& grad, const Tensor& momentum_buffer, double weight_decay,
                      double momentum, double lr, double dampening, bool nesterov, bool maximize, bool is_first_step) {
  fused_sgd_meta(self, grad, momentum_buffer, momentum);
  cuda::CUDAGuard guard(self.device());
  const Tensor g = contiguous_cuda(grad);  // read only: an expanded or strided gradient is fine
  const bool has_buf = momentum_buffer.defined();
  kc::sgd_step(self.dtype(), self.data_ptr(), g.data_ptr(), has_buf ? momentum_buffer.data_ptr() : nullptr,
               self.numel(), kc::SGDStep{weight_decay, momentum, lr, dampening, nesterov, maximize, is_first_step},
               cuda_stream(self.device()));
  self.impl()->bump_version();
  if (has_buf) momentum_buffer.impl()->bump_version();
  return self;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) { m.impl("_fused_sgd_", REMAT_FN(fused_sgd_cuda)); }

}  // namespace remat::ops
