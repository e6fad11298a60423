// Mirrors ATen/native/cuda/layer_norm_kernel.cu registration (native_layer_norm,
// native_layer_norm_backward) and the fused RMSNorm ops (_fused_rms_norm, _fused_rms_norm_backward)
// on CUDA, with ops/normalization.cpp's meta functions: mean and rstd have the input's leading
// dims followed by size-1 normalised dims and the statistic dtype (float for 16-bit inputs);
// weight and bias are used in that dtype (so a BFloat16 input may have Float weights), and their
// gradients are returned in each parameter's own dtype.
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/normalization.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// A parameter or statistic as a contiguous tensor of the statistic dtype (undefined stays undefined).
Tensor as_stat(const Tensor& t, ScalarType dtype) { return t.defined() ? contiguous_cuda(cast_cuda(t, dtype)) : Tensor(); }
void* ptr_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }
// A parameter's gradient: computed in the statistic dtype, returned in the parameter's dtype.
Tensor param_grad(const Tensor& acc, const Tensor& param) {
  return param.defined() ? cast_cuda(acc, param.dtype()) : Tensor();
}
Tensor stat_empty(const NormGeometry& g, Device device) { return make_empty(g.stat_shape, g.stat_dtype, device); }

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_cuda(const Tensor& input, const Shape& normalized_shape,
                                                          const Tensor& weight, const Tensor& bias, double eps) {
  NormGeometry g = layer_norm_meta(input, normalized_shape, weight, bias);
  cuda::CUDAGuard guard(input.device());
  Tensor out = make_empty(input.sizes(), input.dtype(), input.device());
  Tensor mean = stat_empty(g, input.device()), rstd = stat_empty(g, input.device());
  Tensor x = contiguous_cuda(input);
  Tensor w = as_stat(weight, g.stat_dtype), b = as_stat(bias, g.stat_dtype);
  kc::layer_norm_forward(input.dtype(), x.data_ptr(), ptr_or_null(w), ptr_or_null(b), out.data_ptr(), mean.data_ptr(),
                         rstd.data_ptr(), g.M, g.N, eps, cuda_stream(input.device()));
  return {out, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_cuda(const Tensor& grad_out, const Tensor& input,
                                                                   const Shape& normalized_shape, const Tensor& mean,
                                                                   const Tensor& rstd, const Tensor& weight,
                                                                   const Tensor& bias) {
  NormGeometry g = layer_norm_backward_meta(grad_out, input, normalized_shape, mean, rstd, weight, bias);
  const Device device = input.device();
  cuda::CUDAGuard guard(device);
  Tensor grad_input = make_empty(input.sizes(), input.dtype(), device);
  Tensor grad_weight_acc = weight.defined() ? make_empty(normalized_shape, g.stat_dtype, device) : Tensor();
  Tensor grad_bias_acc = bias.defined() ? make_empty(normalized_shape, g.stat_dtype, device) : Tensor();
  Tensor dy = contiguous_cuda(grad_out), x = contiguous_cuda(input);
  Tensor mu = as_stat(mean, g.stat_dtype), r = as_stat(rstd, g.stat_dtype), w = as_stat(weight, g.stat_dtype);
  Tensor ws = weight.defined() || bias.defined()
                  ? cuda_workspace(kc::norm_backward_workspace_bytes(input.dtype(), g.M, g.N), device)
                  : Tensor();
  kc::layer_norm_backward(input.dtype(), dy.data_ptr(), x.data_ptr(), mu.data_ptr(), r.data_ptr(), ptr_or_null(w),
                          grad_input.data_ptr(), ptr_or_null(grad_weight_acc), ptr_or_null(grad_bias_acc), g.M, g.N,
                          ptr_or_null(ws), cuda_stream(device));
  return {grad_input, param_grad(grad_weight_acc, weight), param_grad(grad_bias_acc, bias)};
}

std::tuple<Tensor, Tensor> fused_rms_norm_cuda(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                                               double eps) {
  NormGeometry g = rms_norm_meta(input, normalized_shape, weight);
  cuda::CUDAGuard guard(input.device());
  Tensor out = make_empty(input.sizes(), input.dtype(), input.device());
  Tensor rstd = stat_empty(g, input.device());
  Tensor x = contiguous_cuda(input), w = as_stat(weight, g.stat_dtype);
  kc::rms_norm_forward(input.dtype(), x.data_ptr(), ptr_or_null(w), out.data_ptr(), rstd.data_ptr(), g.M, g.N, eps,
                       cuda_stream(input.device()));
  return {out, rstd};
}

std::tuple<Tensor, Tensor> fused_rms_norm_backward_cuda(const Tensor& grad_out, const Tensor& input,
                                                        const Shape& normalized_shape, const Tensor& rstd,
                                                        const Tensor& weight) {
  NormGeometry g = rms_norm_backward_meta(grad_out, input, normalized_shape, rstd, weight);
  const Device device = input.device();
  cuda::CUDAGuard guard(device);
  Tensor grad_input = make_empty(input.sizes(), input.dtype(), device);
  Tensor grad_weight_acc = weight.defined() ? make_empty(normalized_shape, g.stat_dtype, device) : Tensor();
  Tensor dy = contiguous_cuda(grad_out), x = contiguous_cuda(input);
  Tensor r = as_stat(rstd, g.stat_dtype), w = as_stat(weight, g.stat_dtype);
  Tensor ws = weight.defined() ? cuda_workspace(kc::norm_backward_workspace_bytes(input.dtype(), g.M, g.N), device)
                               : Tensor();
  kc::rms_norm_backward(input.dtype(), dy.data_ptr(), x.data_ptr(), r.data_ptr(), ptr_or_null(w),
                        grad_input.data_ptr(), ptr_or_null(grad_weight_acc), g.M, g.N, ptr_or_null(ws),
                        cuda_stream(device));
  return {grad_input, param_grad(grad_weight_acc, weight)};
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("native_layer_norm", REMAT_FN(native_layer_norm_cuda));
  m.impl("native_layer_norm_backward", REMAT_FN(native_layer_norm_backward_cuda));
  m.impl("_fused_rms_norm", REMAT_FN(fused_rms_norm_cuda));
  m.impl("_fused_rms_norm_backward", REMAT_FN(fused_rms_norm_backward_cuda));
}

}  // namespace remat::ops
