// Mirrors aten/src/ATen/native/FusedAdam.cpp (_fused_adamw_kernel_cpu_): AdamW's update of one
// parameter as one op (kernels/cpu/fused_adam.h), for optim::AdamW with fused(true). One
// tensor per call, not PyTorch's tensor lists: the loop over parameters stays in nn/optim.
#include "engine/dispatch/library.h"
#include "kernels/cpu/fused_adam.h"
#include "ops/cpu_utils.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace remat::ops {

void fused_adamw_meta(const Tensor& self, const Tensor& exp_avg, const Tensor& exp_avg_sq, const Tensor& grad) {
  const char* op = "aten::_fused_adamw_";
  check_defined(op, self, "self");
  check_floating(op, self, "self");
  REMAT_CHECK(self.dtype() == kFloat || self.dtype() == kDouble || self.dtype() == kBFloat16, op,
              ": expected a Float, Double or BFloat16 parameter, but got ", toString(self.dtype()));
  for (const Tensor* t : {&exp_avg, &exp_avg_sq, &grad}) {
    const char* name = t == &exp_avg ? "exp_avg" : t == &exp_avg_sq ? "exp_avg_sq" : "grad";
    check_defined(op, *t, name);
    common_device(op, {&self, t});
    REMAT_CHECK(t->sizes() == self.sizes() && t->dtype() == self.dtype(), op, ": expected ", name,
                " to match the parameter (", self.sizes(), ", ", toString(self.dtype()), "), but got ", t->sizes(),
                ", ", toString(t->dtype()));
  }
  for (const Tensor* t : {&self, &exp_avg, &exp_avg_sq})
    REMAT_CHECK(t->is_contiguous(), op, ": expected the parameter and its moments to be contiguous (",
                t == &self ? "self" : t == &exp_avg ? "exp_avg" : "exp_avg_sq", " has strides ", t->strides(), ")");
}

void fused_adamw_check_step(int64_t step) {
  REMAT_CHECK(step >= 1, "aten::_fused_adamw_: step must be at least 1 (got ", step, ")");
}

namespace {

namespace cpu = kernels::cpu;

cpu::AdamWStep step_of(double lr, double beta1, double beta2, double weight_decay, double eps, int64_t step,
                       bool maximize) {
  fused_adamw_check_step(step);
  return {lr, beta1, beta2, weight_decay, eps, step, maximize};
}

Tensor fused_adamw_cpu(const Tensor& self, const Tensor& exp_avg, const Tensor& exp_avg_sq, const Tensor& grad,
                       double lr, double beta1, double beta2, double weight_decay, double eps, int64_t step,
                       bool maximize) {
  fused_adamw_meta(self, exp_avg, exp_avg_sq, grad);
  const cpu::AdamWStep s = step_of(lr, beta1, beta2, weight_decay, eps, step, maximize);
  const Tensor g = contiguous_cpu(grad);  // read only: an expanded or strided gradient is fine
  const int64_t n = self.numel();
  switch (self.dtype()) {
    case kFloat:
      cpu::fused_adamw(self.data_ptr<float>(), g.data_ptr<float>(), exp_avg.data_ptr<float>(),
                       exp_avg_sq.data_ptr<float>(), n, s);
      break;
    case kDouble:
      cpu::fused_adamw(self.data_ptr<double>(), g.data_ptr<double>(), exp_avg.data_ptr<double>(),
                       exp_avg_sq.data_ptr<double>(), n, s);
      break;
    default:
      cpu::fused_adamw(self.data_ptr<BFloat16>(), g.data_ptr<BFloat16>(), exp_avg.data_ptr<BFloat16>(),
                       exp_avg_sq.data_ptr<BFloat16>(), n, s);
  }
  for (const Tensor* t : {&self, &exp_avg, &exp_avg_sq}) t->impl()->bump_version();
  return self;
}

Tensor fused_adamw_meta_kernel(const Tensor& self, const Tensor& exp_avg, const Tensor& exp_avg_sq, const Tensor& grad,
                               double lr, double beta1, double beta2, double weight_decay, double eps, int64_t step,
                               bool maximize) {
  fused_adamw_meta(self, exp_avg, exp_avg_sq, grad);
  step_of(lr, beta1, beta2, weight_decay, eps, step, maximize);
  // The CPU kernel's contiguous copy of a strided gradient, so that a dry run counts it too.
  const Tensor g = grad.is_contiguous() ? grad : make_empty(grad.sizes(), grad.dtype(), Device{kMeta});
  for (const Tensor* t : {&self, &exp_avg, &exp_avg_sq}) t->impl()->bump_version();
  return self;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CPU, m) { m.impl("_fused_adamw_", REMAT_FN(fused_adamw_cpu)); }
REMAT_LIBRARY_IMPL(aten, Meta, m) { m.impl("_fused_adamw_", REMAT_FN(fused_adamw_meta_kernel)); }

}  // namespace remat::ops
