// Mirrors aten/src/ATen/native/FusedAdam.cpp (_fused_adamw_kernel_cpu_): AdamW's update of one
// parameter as one op (kernels/cpu/fused_adam.h), for optim::AdamW with fused(true): the meta
// function every backend runs, the CPU kernel and the Meta kernel, registered from the Def
// (ops/fused_optimizer_defs.h). Each kernel reads the gradient by fused_optimizer_grad, so a dry
// run counts its copy of a strided gradient as the backend makes it.
#include "engine/dispatch/library.h"
#include "kernels/cpu/fused_adam.h"
#include "ops/cpu_utils.h"
#include "ops/cuda_temporaries.h"
#include "ops/fused_optimizer_defs.h"
#include "ops/meta.h"
#include "ops/meta_copies.h"
#include "ops/op_utils.h"

namespace remat::ops {

void fused_adamw_meta(const char* op, const Tensor& self, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                      const Tensor& grad, double, double, double, double, double, int64_t step, bool maximize) {
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
  REMAT_CHECK(step >= 1, op, ": step must be at least 1 (got ", step, ")");
  if (self.is_cuda() || (self.is_meta() && cuda_temporaries::imitating())) {
    // The CUDA kernel keeps 16-bit parameters' moments in float; the op's are the parameter's dtype.
    REMAT_CHECK(self.dtype() != kBFloat16, op, ": a BFloat16 parameter is not supported on CUDA (its moments "
                "would be BFloat16; use fused(false), or a Float parameter)");
    REMAT_CHECK(!maximize, op, ": maximize=True is not supported on CUDA (use fused(false))");
  }
}

namespace {

namespace cpu = kernels::cpu;
using AdamW = structured__fused_adamw_;

void fused_adamw_cpu(const char*, const Tensor&, const Tensor& self, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                     const Tensor& grad, double lr, double beta1, double beta2, double weight_decay, double eps,
                     int64_t step, bool maximize) {
  const cpu::AdamWStep s{lr, beta1, beta2, weight_decay, eps, step, maximize};
  const Tensor g = fused_optimizer_grad<CPUCopies>(grad);
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
}

// The Meta kernel's temporaries (structured::impl_meta): the backends' copy of the gradient.
void fused_adamw_meta_copies(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor& grad, double,
                             double, double, double, double, int64_t, bool) {
  fused_optimizer_grad<MetaCopies>(grad);
}

}  // namespace

// The schemas of both fused optimizers from their Defs; _fused_adamw_'s CPU and Meta kernels.
REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_fused_optimizer_def([&](auto def) { structured::define<typename decltype(def)::type>(m, {}); });
}
REMAT_LIBRARY_IMPL(aten, CPU, m) { structured::impl<AdamW, structured::CPUBackend, &fused_adamw_cpu>(m); }
REMAT_LIBRARY_IMPL(aten, Meta, m) { structured::impl_meta<AdamW, &fused_adamw_meta_copies>(m); }

}  // namespace remat::ops
