// Mirrors aten/src/ATen/native/FusedSGD.cpp (_fused_sgd_kernel_cpu_): SGD's update of one
// parameter and its momentum buffer as one op (kernels/cpu/fused_sgd.h), for optim::SGD with
// fused(true). One tensor per call, not PyTorch's tensor lists (the loop over parameters stays in
// nn/optim), and no grad_scale / found_inf (remat has no GradScaler). The checks every backend
// runs, and the CPU and Meta kernels; the CUDA kernel is ops/cuda/fused_sgd.cpp.
#include "engine/dispatch/library.h"
#include "kernels/cpu/fused_sgd.h"
#include "ops/cpu_utils.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace remat::ops {

namespace {
constexpr const char* kOp = "aten::_fused_sgd_";
}  // namespace

// momentum_buffer: defined exactly when momentum != 0 (PyTorch: an empty momentum_buffer_list
// for momentum 0).
void fused_sgd_meta(const Tensor& self, const Tensor& grad, const Tensor& momentum_buffer, double momentum) {
  check_defined(kOp, self, "self");
  check_floating(kOp, self, "self");
  REMAT_CHECK(self.dtype() == kFloat || self.dtype() == kDouble || self.dtype() == kBFloat16, kOp,
              ": expected a Float, Double or BFloat16 parameter, but got ", toString(self.dtype()));
  REMAT_CHECK(self.is_contiguous(), kOp, ": expected the parameter to be contiguous (self has sizes ", self.sizes(),
              " and strides ", self.strides(), ")");
  check_defined(kOp, grad, "grad");
  if (momentum != 0) {
    REMAT_CHECK(momentum_buffer.defined(), kOp, ": momentum is ", momentum, " but momentum_buffer is None");
  } else {
    REMAT_CHECK(!momentum_buffer.defined(), kOp, ": momentum is 0 but a momentum_buffer was given (",
                momentum_buffer.sizes(), ", ", toString(momentum_buffer.dtype()), ")");
  }
  common_device(kOp, {&self, &grad, &momentum_buffer});
  for (const Tensor* t : {&grad, &momentum_buffer}) {
    if (!t->defined()) continue;
    const char* name = t == &grad ? "grad" : "momentum_buffer";
    REMAT_CHECK(t->sizes() == self.sizes() && t->dtype() == self.dtype(), kOp, ": expected ", name,
                " to match the parameter (", self.sizes(), ", ", toString(self.dtype()), "), but got ", t->sizes(),
                ", ", toString(t->dtype()));
  }
  REMAT_CHECK(!momentum_buffer.defined() || momentum_buffer.is_contiguous(), kOp,
              ": expected momentum_buffer to be contiguous (it has strides ", momentum_buffer.strides(), ")");
}

namespace {

namespace cpu = kernels::cpu;

void bump_versions(const Tensor& self, const Tensor& momentum_buffer) {
  self.impl()->bump_version();
  if (momentum_buffer.defined()) momentum_buffer.impl()->bump_version();
}

Tensor fused_sgd_cpu(const Tensor& self, const Tensor& grad, const Tensor& momentum_buffer, double weight_decay,
                     double momentum, double lr, double dampening, bool nesterov, bool maximize, bool is_first_step) {
  fused_sgd_meta(self, grad, momentum_buffer, momentum);
  const cpu::SGDStep s{weight_decay, momentum, lr, dampening, nesterov, maximize, is_first_step};
  const Tensor g = contiguous_cpu(grad);  // read only: an expanded or strided gradient is fine
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
  bump_versions(self, momentum_buffer);
  return self;
}

Tensor fused_sgd_meta_kernel(const Tensor& self, const Tensor& grad, const Tensor& momentum_buffer,
                             double /*weight_decay*/, double momentum, double /*lr*/, double /*dampening*/,
                             bool /*nesterov*/, bool /*maximize*/, bool /*is_first_step*/) {
  fused_sgd_meta(self, grad, momentum_buffer, momentum);
  // The CPU kernel's contiguous copy of a strided gradient, so that a dry run counts it too.
  const Tensor g = grad.is_contiguous() ? grad : make_empty(grad.sizes(), grad.dtype(), Device{kMeta});
  bump_versions(self, momentum_buffer);
  return self;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CPU, m) { m.impl("_fused_sgd_", REMAT_FN(fused_sgd_cpu)); }
REMAT_LIBRARY_IMPL(aten, Meta, m) { m.impl("_fused_sgd_", REMAT_FN(fused_sgd_meta_kernel)); }

}  // namespace remat::ops
