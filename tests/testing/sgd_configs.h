// Test helper: the SGD hyperparameters the _fused_sgd_ tests run (CPU and CUDA alike), and one
// call of the op with them.
#pragma once

#include <vector>

#include "remat.h"

namespace remat::testing {

struct SGDConfig {
  double weight_decay, momentum, lr, dampening;
  bool nesterov, maximize;
};

inline const std::vector<SGDConfig> kSGDConfigs = {
    {0.0, 0.0, 0.1, 0.0, false, false},    // plain SGD
    {0.05, 0.0, 0.1, 0.0, false, true},    // weight decay and maximize, no buffer
    {0.01, 0.9, 0.1, 0.1, false, false},   // momentum with dampening
    {0.1, 0.9, 0.05, 0.0, true, false},    // Nesterov
    {0.0, 0.5, 0.1, 0.0, false, true},     // momentum and maximize
};

inline Tensor& fused_sgd_step(Tensor& p, const Tensor& g, const Tensor& buf, const SGDConfig& c, bool first) {
  return _fused_sgd_(p, g, buf, c.weight_decay, c.momentum, c.lr, c.dampening, c.nesterov, c.maximize, first);
}

}  // namespace remat::testing
