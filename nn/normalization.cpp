// Mirrors torch/nn/modules/normalization.py.
#include "nn/normalization.h"

#include "ops/functions.h"

namespace remat::nn {

LayerNorm::LayerNorm(int64_t d, double e, bool affine, bool has_bias, TensorOptions options)
    : Module("LayerNorm"),
      weight(register_parameter("weight", affine ? ones({d}, options.requires_grad(false)) : Tensor())),
      bias(register_parameter("bias", affine && has_bias ? zeros({d}, options.requires_grad(false)) : Tensor())),
      dim(d),
      eps(e) {}

Tensor LayerNorm::forward(const Tensor& x) const {
  auto s = enter();
  return layer_norm(x, {dim}, weight, bias, eps);
}

RMSNorm::RMSNorm(int64_t d, double e, bool affine, TensorOptions options)
    : Module("RMSNorm"),
      weight(register_parameter("weight", affine ? ones({d}, options.requires_grad(false)) : Tensor())),
      dim(d),
      eps(e) {}

Tensor RMSNorm::forward(const Tensor& x) const {
  auto s = enter();
  return rms_norm(x, {dim}, weight, eps);
}

}  // namespace remat::nn
