// Mirrors ATen/native/cuda/FusedSgdKernel.cu (_fused_sgd_kernel_cuda_): SGD's update of one
// parameter and its momentum buffer as one op on CUDA (kernels/cuda/sgd.h), so that optim::SGD
// with fused(true) runs on the device; registered from the Def (ops/fused_optimizer_defs.h), and
// reading the gradient by fused_optimizer_grad as the Meta kernel counts it.
#include "engine/dispatch/library.h"
#include "kernels/cuda/sgd.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/fused_optimizer_defs.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

void fused_sgd_cuda(const char*, const Tensor&, const Tensor& self, const Tensor& grad, const Tensor& momentum_buffer,
                    double weight_decay, double momentum, double lr, double dampening, bool nesterov, bool maximize,
                    bool is_first_step) {
  const Tensor g = fused_optimizer_grad<CUDACopies>(grad);
  kc::sgd_step(self.dtype(), self.data_ptr(), g.data_ptr(),
               momentum_buffer.defined() ? momentum_buffer.data_ptr() : nullptr, self.numel(),
               kc::SGDStep{weight_decay, momentum, lr, dampening, nesterov, maximize, is_first_step},
               cuda_stream(self.device()));
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  structured::impl<structured__fused_sgd_, structured::CUDABackend, &fused_sgd_cuda>(m);
}

}  // namespace remat::ops
