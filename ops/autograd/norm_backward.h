// Mirrors torch/csrc/autograd/FunctionsManual.cpp (layer_norm_double_backward): the derivative of
// the fused normalisation backward kernels, written with differentiable dispatcher ops so that
// create_graph records it (second-order gradients of layer_norm and rms_norm).
#pragma once

#include "engine/core/tensor.h"

namespace remat::ops::autograd {

// The gradients of (grad_input, grad_weight, grad_bias) = norm_backward(grad_out, input, ...)
// with respect to grad_out, input and weight, given the incoming gradients ggI (of grad_input,
// always defined), ggW (of grad_weight; undefined without weight) and ggB (of grad_bias;
// undefined without bias). mean/rstd are the forward's statistics; input's gradient treats them
// as the functions of input they are. center = true: layer norm; false: RMS norm (mean unused).
// grad_out may be undefined when neither input's nor weight's gradient is needed.
struct NormDoubleBackward {
  Tensor grad_grad_out, grad_input, grad_weight;
};
NormDoubleBackward norm_double_backward(bool center, const Tensor& grad_out, const Tensor& input,
                                        const Shape& normalized_shape, const Tensor& mean, const Tensor& rstd,
                                        const Tensor& weight, const Tensor& ggI, const Tensor& ggW, const Tensor& ggB,
                                        bool need_grad_out, bool need_input, bool need_weight);

}  // namespace remat::ops::autograd
