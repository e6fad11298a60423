// Mirrors torch/nn/modules/dropout.py (nn.Dropout): active in training mode only.
#pragma once

#include "nn/module.h"

namespace remat::nn {

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator* generator = nullptr);
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  double p;
  Generator* generator;  // nullptr: the device's default generator
};

}  // namespace remat::nn
