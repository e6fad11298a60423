// What the normalization kernels allocate (no PyTorch counterpart: layer_norm_kernel.cpp and
// .cu allocate inside their kernels, and FakeTensorMode does not count memory): the outputs and
// temporaries of native_layer_norm, _fused_rms_norm and their backward kernels, declared once as
// templates over a backend's copies. The CPU and CUDA kernels run them with CPUCopies and
// CUDACopies; the Meta kernels with MetaCopies (ops/meta_copies.h), for the backend a dry run
// counts like. So a dry run allocates what the backend allocates, in the same order.
//
// mean and rstd have the input's leading dims followed by size-1 normalised dims and the
// statistic dtype; parameters and statistics are read contiguous in that dtype; a parameter's
// gradient is computed in it and returned in the parameter's own dtype. The CUDA backward kernels
// take a workspace for the parameters' gradients (kernels/cuda/workspace_sizes.h).
#pragma once

#include <tuple>

#include "engine/core/tensor.h"
#include "kernels/cuda/workspace_sizes.h"
#include "ops/meta.h"

namespace remat::ops {

// t as a contiguous tensor of dtype (undefined stays undefined).
template <class Copies>
Tensor as_stat(const Tensor& t, ScalarType dtype) {
  return t.defined() ? Copies::contiguous(Copies::cast(t, dtype)) : Tensor();
}

// The forward kernels' tensors, in the order they are made (rms_norm has no mean, no bias).
struct NormForwardBuffers {
  Tensor out, mean, rstd;  // the outputs
  Tensor x, w, b;          // the input, weight and bias as the kernel reads them
};
template <class Copies>
NormForwardBuffers norm_forward_buffers(const NormGeometry& g, const Tensor& input, const Tensor& weight,
                                        const Tensor& bias, bool with_mean) {
  NormForwardBuffers r;
  const Device device = input.device();
  r.out = make_empty(input.sizes(), input.dtype(), device);
  if (with_mean) r.mean = make_empty(g.stat_shape, g.stat_dtype, device);
  r.rstd = make_empty(g.stat_shape, g.stat_dtype, device);
  r.x = Copies::contiguous(input);
  r.w = as_stat<Copies>(weight, g.stat_dtype);
  r.b = as_stat<Copies>(bias, g.stat_dtype);
  return r;
}

// The statistics native_layer_norm returns. PyTorch's CPU kernel returns mean and rstd in the
// parameters' dtype (param_scalar_type: the input's, or Float for a BFloat16/Half input with a
// Float weight or bias), computed in float and rounded; its CUDA kernel returns them in float.
// The kernels compute them into the statistic dtype (r.mean, r.rstd); on the CPU, for a 16-bit
// input, they are then cast, so that a plan names the outputs PyTorch's CPU run shows. A dry run
// imitating either device returns, and allocates, what that device does.
template <class Copies, DeviceType kBackend>
std::tuple<Tensor, Tensor> layer_norm_returned_stats(const NormForwardBuffers& r, const Tensor& input,
                                                     const Tensor& weight, const Tensor& bias) {
  if constexpr (kBackend == kCPU) {
    const bool mixed = (weight.defined() && weight.dtype() == kFloat) || (bias.defined() && bias.dtype() == kFloat);
    const ScalarType dtype = mixed ? kFloat : input.dtype();
    return {Copies::cast(r.mean, dtype), Copies::cast(r.rstd, dtype)};
  }
  return {r.mean, r.rstd};
}

// The backward kernels' tensors, in the order they are made; freed in the reverse order.
struct NormBackwardBuffers {
  Tensor grad_input, grad_weight_acc, grad_bias_acc;  // the parameters' in the statistic dtype
  Tensor dy, x, mu, r, w;                             // the operands as the kernel reads them
  Tensor workspace;                                   // CUDA's, when a parameter's gradient is computed
};
// mean undefined: rms_norm's backward.
template <class Copies, DeviceType kBackend>
NormBackwardBuffers norm_backward_buffers(const NormGeometry& g, const Tensor& grad_out, const Tensor& input,
                                          const Shape& normalized_shape, const Tensor& mean, const Tensor& rstd,
                                          const Tensor& weight, const Tensor& bias) {
  NormBackwardBuffers r;
  const Device device = input.device();
  r.grad_input = make_empty(input.sizes(), input.dtype(), device);
  if (weight.defined()) r.grad_weight_acc = make_empty(normalized_shape, g.stat_dtype, device);
  if (bias.defined()) r.grad_bias_acc = make_empty(normalized_shape, g.stat_dtype, device);
  r.dy = Copies::contiguous(grad_out);
  r.x = Copies::contiguous(input);
  r.mu = as_stat<Copies>(mean, g.stat_dtype);
  r.r = as_stat<Copies>(rstd, g.stat_dtype);
  r.w = as_stat<Copies>(weight, g.stat_dtype);
  if constexpr (kBackend == kCUDA) {
    if (weight.defined() || bias.defined())
      r.workspace = Copies::workspace(kernels::cuda::norm_backward_workspace_bytes(input.dtype(), g.M, g.N), device);
  }
  return r;
}
// The backward's outputs, once the kernel has run: the parameters' gradients in their dtypes.
template <class Copies>
std::tuple<Tensor, Tensor, Tensor> norm_backward_outputs(const NormBackwardBuffers& r, const Tensor& weight,
                                                         const Tensor& bias) {
  auto param_grad = [](const Tensor& acc, const Tensor& param) {
    return param.defined() ? Copies::cast(acc, param.dtype()) : Tensor();
  };
  Tensor grad_weight = param_grad(r.grad_weight_acc, weight);
  return {r.grad_input, grad_weight, param_grad(r.grad_bias_acc, bias)};
}

}  // namespace remat::ops
