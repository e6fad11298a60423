// Mirrors torch/optim/adamw.py (torch.optim.AdamW, the single-tensor path) and
// torch/csrc/api/include/torch/optim/adamw.h (AdamWOptions): Adam with decoupled weight decay.
//
// Per parameter p with gradient g, at step t = 1, 2, ... (PyTorch's rule, step by step):
//   g = maximize ? -g : g
//   p = p * (1 - lr * weight_decay)
//   m = lerp(m, g, 1 - beta1)                    (m + (1 - beta1) * (g - m))
//   v = beta2 * v + (1 - beta2) * g * g
//   v_hat = amsgrad ? (vmax = max(vmax, v)) : v
//   denom = sqrt(v_hat) / sqrt(1 - beta2^t) + eps
//   p = p - (lr / (1 - beta1^t)) * m / denom
#pragma once

#include <tuple>
#include <unordered_map>

#include "nn/optim/optimizer.h"

namespace remat::optim {

struct AdamWOptions : public OptimizerOptions {
  explicit AdamWOptions(double lr = 1e-3) : lr_(lr) {}
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<AdamWOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }

  REMAT_ARG(double, lr);
  using betas_t = std::tuple<double, double>;
  REMAT_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  REMAT_ARG(double, eps) = 1e-8;
  REMAT_ARG(double, weight_decay) = 1e-2;
  REMAT_ARG(bool, amsgrad) = false;
  REMAT_ARG(bool, maximize) = false;
  // One _fused_adamw_ per parameter (one pass, no temporaries) instead of the single-tensor
  // sequence of ops: PyTorch's fused=True. Same rule; the bits may differ in the last place
  // (different rounding order). Without amsgrad: CPU parameters (Float, Double, BFloat16) and CUDA
  // ones (Float, Double, without maximize); others take the op sequence.
  REMAT_ARG(bool, fused) = false;
};

// What AdamW keeps per parameter (PyTorch's state[p]).
struct AdamWParamState {
  int64_t step = 0;
  Tensor exp_avg;         // m, zeros like p
  Tensor exp_avg_sq;      // v, zeros like p
  Tensor max_exp_avg_sq;  // amsgrad only
};

class AdamW : public Optimizer {
 public:
  AdamW(const std::vector<OptimizerParamGroup>& param_groups, AdamWOptions defaults = AdamWOptions());
  AdamW(std::vector<Tensor> params, AdamWOptions defaults = AdamWOptions());

  void step() override;

  // p's state, or nullptr before its first step.
  const AdamWParamState* state(const Tensor& p) const;

 protected:
  void validate(const OptimizerOptions& options) const override;

 private:
  std::unordered_map<const TensorImpl*, AdamWParamState> state_;
};

}  // namespace remat::optim
