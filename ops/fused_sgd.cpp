// Mirrors aten/src/ATen/native/FusedSGD.cpp (_fused_sgd_kernel_cpu_): SGD's update of one
// parameter and its momentum buffer as one op (kernels/cpu/fused_sgd.h), for optim::SGD with
// fused(true). One tensor per call, not PyTorch's tensor lists (the loop over parameters stays in
// nn/optim), and no grad_scale / found_inf (remat has no GradScaler). The meta function every
// backend runs, the CPU kernel and the Meta kernel, registered from the Def
// (ops/fused_optimizer_defs.h; its schema is defined with _fused_adamw_'s, in ops/fused_adam.cpp);
// the CUDA kernel is ops/cuda/fused_sgd.cpp.
#include "engine/dispatch/library.h"
#include "kernels/cpu/fused_sgd.h"
#include "ops/cpu_utils.h"
#include "ops/fused_optimizer_defs.h"
#include "ops/meta.h"
#include "ops/meta_copies.h"
#include "ops/op_utils.h"

namespace remat::ops {

// momentum_buffer: defined exactly when momentum != 0 (PyTorch: an empty momentum_buffer_list
// for momentum 0).
void fused_sgd_meta(const char* op, const Tensor& self, const Tensor& grad, const Tensor& momentum_buffer, double,
                    double momentum, double, double, bool, bool, bool) {
  check_defined(op, self, "self");
  check_floating(op, self, "self");
  REMAT_CHECK(self.dtype() == kFloat || self.dtype() == kDouble || self.dtype() == kBFloat16, op,
              ": expected a Float, Double or BFloat16 parameter, but got ", toString(self.dtype()));
  REMAT_CHECK(self.is_contiguous(), op, ": expected the parameter to be contiguous (self has sizes ", self.sizes(),
              " and strides ", self.strides(), ")");
  check_defined(op, grad, "grad");
  if (momentum != 0) {
    REMAT_CHECK(momentum_buffer.defined(), op, ": momentum is ", momentum, " but momentum_buffer is None");
  } else {
    REMAT_CHECK(!momentum_buffer.defined(), op, ": momentum is 0 but a momentum_buffer was given (",
                momentum_buffer.sizes(), ", ", toString(momentum_buffer.dtype()), ")");
  }
  common_device(op, {&self, &grad, &momentum_buffer});
  for (const Tensor* t : {&grad, &momentum_buffer}) {
    if (!t->defined()) continue;
    const char* name = t == &grad ? "grad" : "momentum_buffer";
    REMAT_CHECK(t->sizes() == self.sizes() && t->dtype() == self.dtype(), op, ": expected ", name,
                " to match the parameter (", self.sizes(), ", ", toString(self.dtype()), "), but got ", t->sizes(),
                ", ", toString(t->dtype()));
  }
  REMAT_CHECK(!momentum_buffer.defined() || momentum_buffer.is_contiguous(), op,
              ": expected momentum_buffer to be contiguous (it has strides ", momentum_buffer.strides(), ")");
}

namespace {

namespace cpu = kernels::cpu;
using SGD = structured__fused_sgd_;

void fused_sgd_cpu(const char*, const Tensor&, const Tensor& self, const Tensor& grad, const Tensor& momentum_buffer,
                   double weight_decay, double momentum, double lr, double dampening, bool nesterov, bool maximize,
                   bool is_first_step) {
  const cpu::SGDStep s{weight_decay, momentum, lr, dampening, nesterov, maximize, is_first_step};
  const Tensor g = fused_optimizer_grad<CPUCopies>(grad);
  const bool has_buf = momentum_buffer.defined();
  const int64_t n = self.numel();
  switch (self.dtype()) {
    case kFloat:
      cpu::fused_sgd(self.data_ptr<float>(), g.data_ptr<float>(),
                     has_buf ? momentum_buffer.data_ptr<float>() : nullptr, n, s);
      break;
    case kDouble:
      cpu::fused_sgd(self.data_ptr<double>(), g.data_ptr<double>(),
                     has_buf ? momentum_buffer.data_ptr<double>() : nullptr, n, s);
      break;
    default:
      cpu::fused_sgd(self.data_ptr<BFloat16>(), g.data_ptr<BFloat16>(),
                     has_buf ? momentum_buffer.data_ptr<BFloat16>() : nullptr, n, s);
  }
}

// The Meta kernel's temporaries (structured::impl_meta): the backends' copy of the gradient.
void fused_sgd_meta_copies(const Tensor&, const Tensor&, const Tensor& grad, const Tensor&, double, double, double,
                           double, bool, bool, bool) {
  fused_optimizer_grad<MetaCopies>(grad);
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CPU, m) { structured::impl<SGD, structured::CPUBackend, &fused_sgd_cpu>(m); }
REMAT_LIBRARY_IMPL(aten, Meta, m) { structured::impl_meta<SGD, &fused_sgd_meta_copies>(m); }

}  // namespace remat::ops
