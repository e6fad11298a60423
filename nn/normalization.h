// Mirrors torch/nn/modules/normalization.py (nn.LayerNorm, nn.RMSNorm).
#pragma once

#include "nn/module.h"

namespace remat::nn {

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool elementwise_affine = true, bool bias = true,
                     TensorOptions options = {});
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  Tensor& weight;  // ones
  Tensor& bias;    // zeros
  int64_t dim;
  double eps;
};

class RMSNorm : public Module {
 public:
  explicit RMSNorm(int64_t dim, double eps = 1e-6, bool elementwise_affine = true, TensorOptions options = {});
  Tensor forward(const Tensor& x) const;
  Tensor operator()(const Tensor& x) const { return forward(x); }
  Tensor& weight;  // ones
  int64_t dim;
  double eps;
};

}  // namespace remat::nn
