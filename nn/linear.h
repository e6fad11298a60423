// Mirrors torch/nn/modules/linear.py (nn.Linear): y = x W^T + b.
#pragma once

#include "nn/module.h"

namespace remat::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator* generator = nullptr,
         TensorOptions options = {});
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }

  Tensor& weight;  // [out_features, in_features]
  Tensor& bias;    // [out_features], undefined without bias
  int64_t in_features, out_features;
};

}  // namespace remat::nn
