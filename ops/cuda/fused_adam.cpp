// Mirrors ATen/native/cuda/FusedAdamWKernel.cu (_fused_adamw_kernel_cuda_): AdamW's update of one
// parameter as one op on CUDA (kernels/cuda/adamw.h), so that optim::AdamW with fused(true) runs
// on the device; registered from the Def (ops/fused_optimizer_defs.h), whose meta function holds
// the CUDA kernel's limits too, and reading the gradient by fused_optimizer_grad as the Meta
// kernel counts it.
#include "engine/dispatch/library.h"
#include "kernels/cuda/adamw.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/fused_optimizer_defs.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

void fused_adamw_cuda(const char*, const Tensor&, const Tensor& self, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                      const Tensor& grad, double lr, double beta1, double beta2, double weight_decay, double eps,
                      int64_t step, bool /*maximize: refused by the meta function*/) {
  const Tensor g = fused_optimizer_grad<CUDACopies>(grad);
  kc::adamw_step(self.dtype(), self.data_ptr(), g.data_ptr(), exp_avg.data_ptr(), exp_avg_sq.data_ptr(), self.numel(),
                 lr, beta1, beta2, eps, weight_decay, step, cuda_stream(self.device()));
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  structured::impl<structured__fused_adamw_, structured::CUDABackend, &fused_adamw_cuda>(m);
}

}  // namespace remat::ops
