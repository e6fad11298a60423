// Mirrors the arguments of ATen's _fused_sgd_ (torch/optim/sgd.py's rule, one parameter): the
// hyperparameters of one SGD step, shared by the CPU kernel (kernels/cpu/fused_sgd.h) and the
// CUDA one (kernels/cuda/sgd.h). For each element:
//   d = maximize ? -g : g;  d = d + p * weight_decay
//   buf = first ? d : buf * momentum + d * (1 - dampening);  d = nesterov ? d + buf * momentum : buf
//   p = p + d * -lr
#pragma once

namespace remat::kernels {

struct SGDStep {
  double weight_decay, momentum, lr, dampening;
  bool nesterov, maximize;
  bool is_first_step;  // the buffer's first update: buf = d (its old contents are not read)
};

}  // namespace remat::kernels
