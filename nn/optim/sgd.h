// Mirrors torch/optim/sgd.py (torch.optim.SGD, the single-tensor and fused paths) and
// torch/csrc/api/include/torch/optim/sgd.h (SGDOptions): stochastic gradient descent with
// optional momentum, dampening, Nesterov momentum, L2 weight decay and maximize.
//
// Per parameter p with gradient g (PyTorch's rule, step by step):
//   g = maximize ? -g : g
//   if weight_decay != 0:  g = g + weight_decay * p
//   if momentum != 0:
//     buf = first step ? clone(g) : momentum * buf + (1 - dampening) * g
//     g = nesterov ? g + momentum * buf : buf
//   p = p - lr * g
#pragma once

#include <unordered_map>

#include "nn/optim/optimizer.h"

namespace remat::optim {

struct SGDOptions : public OptimizerOptions {
  explicit SGDOptions(double lr = 1e-3) : lr_(lr) {}
  std::unique_ptr<OptimizerOptions> clone() const override { return std::make_unique<SGDOptions>(*this); }
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }

  REMAT_ARG(double, lr);
  REMAT_ARG(double, momentum) = 0;
  REMAT_ARG(double, dampening) = 0;
  REMAT_ARG(double, weight_decay) = 0;
  REMAT_ARG(bool, nesterov) = false;
  REMAT_ARG(bool, maximize) = false;
  // One _fused_sgd_ per parameter (one pass, no temporaries) instead of the single-tensor
  // sequence of ops: PyTorch's fused=True. Same rule and, for float and double, the same bits
  // (bfloat16 computes in float, rounding once per step instead of once per op). Contiguous
  // CPU parameters of those dtypes (and Meta ones in a dry run counting like the CPU); others,
  // CUDA's included (no CUDA kernel yet), take the op sequence.
  REMAT_ARG(bool, fused) = false;
};

class SGD : public Optimizer {
 public:
  SGD(const std::vector<OptimizerParamGroup>& param_groups, SGDOptions defaults = SGDOptions());
  SGD(std::vector<Tensor> params, SGDOptions defaults = SGDOptions());

  void step() override;

  // The momentum buffer of p (undefined before its first step with momentum).
  Tensor momentum_buffer(const Tensor& p) const;

 protected:
  void validate(const OptimizerOptions& options) const override;

 private:
  // One _fused_sgd_ for p (fused(true)); false, having done nothing, where it does not apply.
  bool fused_step(const SGDOptions& o, Tensor& p);

  std::unordered_map<const TensorImpl*, Tensor> momentum_buffers_;
};

}  // namespace remat::optim
