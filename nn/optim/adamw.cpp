// Mirrors torch/optim/adamw.py (_single_tensor_adamw, non-capturable; _fused_adamw with fused).
#include "nn/optim/adamw.h"

#include <cmath>

#include "engine/autograd/grad_mode.h"
#include "ops/functions.h"

namespace remat::optim {

AdamW::AdamW(const std::vector<OptimizerParamGroup>& param_groups, AdamWOptions defaults)
    : Optimizer("AdamW", std::make_unique<AdamWOptions>(defaults)) {
  validate(defaults);
  size_t n = 0;
  for (const OptimizerParamGroup& g : param_groups) n += g.params().size();
  REMAT_CHECK(n > 0, "AdamW: optimizer got an empty parameter list");
  for (const OptimizerParamGroup& g : param_groups) add_param_group(g);
}

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions defaults)
    : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

void AdamW::validate(const OptimizerOptions& options) const {
  const auto& o = static_cast<const AdamWOptions&>(options);
  auto [beta1, beta2] = o.betas();
  // Written as !(ok) so that NaN is rejected too.
  REMAT_CHECK(o.lr() >= 0.0, "AdamW: Invalid learning rate: ", o.lr());
  REMAT_CHECK(o.eps() >= 0.0, "AdamW: Invalid epsilon value: ", o.eps());
  REMAT_CHECK(beta1 >= 0.0 && beta1 < 1.0, "AdamW: Invalid beta parameter at index 0: ", beta1);
  REMAT_CHECK(beta2 >= 0.0 && beta2 < 1.0, "AdamW: Invalid beta parameter at index 1: ", beta2);
  REMAT_CHECK(o.weight_decay() >= 0.0, "AdamW: Invalid weight_decay value: ", o.weight_decay());
}

const AdamWParamState* AdamW::state(const Tensor& p) const {
  auto it = state_.find(p.unsafeGetTensorImpl());
  return it == state_.end() ? nullptr : &it->second;
}

void AdamW::step() {
  autograd::NoGradGuard no_grad;
  MemoryPhaseGuard phase(MemoryPhase::Optimizer);
  for (OptimizerParamGroup& group : param_groups()) {
    const auto& o = static_cast<const AdamWOptions&>(group.options());
    auto [beta1, beta2] = o.betas();
    const double lr = o.lr();
    for (Tensor& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = neg(grad);
      AdamWParamState& s = state_[p.unsafeGetTensorImpl()];
      if (s.step == 0) {
        MemoryCategoryGuard state(MemoryCategory::OptimizerState);
        s.exp_avg = zeros_like(p);
        s.exp_avg_sq = zeros_like(p);
        if (o.amsgrad()) s.max_exp_avg_sq = zeros_like(p);
      }
      s.step += 1;

      // The fused kernel: on the CPU for Float, Double and BFloat16; on CUDA for Float and Double
      // without maximize. A Meta dry run takes the path of the device it counts like.
      const DeviceType where = p.device().is_meta() ? meta_accounting() : p.device().type;
      const bool fusable = where == kCPU ? (p.dtype() == kFloat || p.dtype() == kDouble || p.dtype() == kBFloat16)
                                         : where == kCUDA && (p.dtype() == kFloat || p.dtype() == kDouble) &&
                                               !o.maximize();
      if (o.fused() && !o.amsgrad() && fusable && p.is_contiguous()) {
        auto [b1, b2] = o.betas();
        _fused_adamw_(p, s.exp_avg, s.exp_avg_sq, p.grad(), lr, b1, b2, o.weight_decay(), o.eps(), s.step,
                      o.maximize());
        continue;
      }

      // Decoupled weight decay.
      mul_(p, 1.0 - lr * o.weight_decay());
      // Decay the first and second moment running averages.
      lerp_(s.exp_avg, grad, 1.0 - beta1);
      addcmul_(mul_(s.exp_avg_sq, beta2), grad, grad, 1.0 - beta2);

      const double t = static_cast<double>(s.step);
      const double bias_correction1 = 1.0 - std::pow(beta1, t);
      const double bias_correction2 = 1.0 - std::pow(beta2, t);
      const double step_size = lr / bias_correction1;
      const double bias_correction2_sqrt = std::pow(bias_correction2, 0.5);

      Tensor second = s.exp_avg_sq;
      if (o.amsgrad()) {
        // The running maximum of v (not of v_hat), as in PyTorch.
        if (!s.max_exp_avg_sq.defined()) {  // amsgrad turned on mid-run
          MemoryCategoryGuard state(MemoryCategory::OptimizerState);
          s.max_exp_avg_sq = zeros_like(p);
        }
        copy_(s.max_exp_avg_sq, maximum(s.max_exp_avg_sq, s.exp_avg_sq));
        second = s.max_exp_avg_sq;
      }
      Tensor denom = div(sqrt(second), bias_correction2_sqrt);
      add_(denom, o.eps());
      addcdiv_(p, s.exp_avg, denom, -step_size);
    }
  }
}

}  // namespace remat::optim
