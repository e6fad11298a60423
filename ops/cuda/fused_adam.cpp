// Mirrors ATen/native/cuda/FusedAdamWKernel.cu (_fused_adamw_kernel_cuda_): AdamW's update of one
// parameter as one op on CUDA (kernels/cuda/adamw.h), so that optim::AdamW with fused(true) runs
// on the device; ops/fused_adam.cpp's checks and Meta kernel (which counts the same copy of a
// strided gradient).
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/adamw.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

Tensor fused_adamw_cuda(const Tensor& self, const Tensor& exp_avg, const Tensor& exp_avg_sq, const Tensor& grad,
                        double lr, double beta1, double beta2, double weight_decay, double eps, int64_t step,
                        bool maximize) {
  const char* op = "aten::_fused_adamw_";
  fused_adamw_meta(self, exp_avg, exp_avg_sq, grad);
  fused_adamw_check_step(step);
  // The kernel keeps 16-bit parameters' moments in float; the op's are the parameter's dtype.
  REMAT_CHECK(self.dtype() != kBFloat16, op, ": a BFloat16 parameter is not supported on CUDA (its moments "
              "would be BFloat16; use fused(false), or a Float parameter)");
  REMAT_CHECK(!maximize, op, ": maximize=True is not supported on CUDA (use fused(false))");
  cuda::CUDAGuard guard(self.device());
  const Tensor g = contiguous_cuda(grad);  // read only: an expanded or strided gradient is fine
  kc::adamw_step(self.dtype(), self.data_ptr(), g.data_ptr(), exp_avg.data_ptr(), exp_avg_sq.data_ptr(), self.numel(),
                 lr, beta1, beta2, eps, weight_decay, step, cuda_stream(self.device()));
  for (const Tensor* t : {&self, &exp_avg, &exp_avg_sq}) t->impl()->bump_version();
  return self;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) { m.impl("_fused_adamw_", REMAT_FN(fused_adamw_cuda)); }

}  // namespace remat::ops
