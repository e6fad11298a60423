// Mirrors ATen/native/cuda/layer_norm_kernel.cu registration (native_layer_norm,
// native_layer_norm_backward) and the fused RMSNorm ops (_fused_rms_norm, _fused_rms_norm_backward)
// on CUDA, with their Defs' meta functions (ops/normalization_defs.h); every kernel allocates by
// ops/norm_buffers.h (the template the Meta kernels imitating CUDA run too): mean and rstd have
// the statistic dtype (float for 16-bit inputs); weight and bias are used in that dtype (so a
// BFloat16 input may have Float weights), and their gradients are returned in each parameter's
// own dtype.
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/normalization.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"
#include "ops/norm_buffers.h"
#include "ops/normalization_defs.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

void* ptr_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

using LayerNorm = structured_native_layer_norm;
using LayerNormBackward = structured_native_layer_norm_backward;
using RmsNorm = structured__fused_rms_norm;
using RmsNormBackward = structured__fused_rms_norm_backward;

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_cuda(const Tensor& input, const Shape& normalized_shape,
                                                          const Tensor& weight, const Tensor& bias, double eps) {
  const NormGeometry g = LayerNorm::meta(LayerNorm::name, input, normalized_shape, weight, bias, eps);
  cuda::CUDAGuard guard(input.device());
  const NormForwardBuffers r = norm_forward_buffers<CUDACopies>(g, input, weight, bias, true);
  kc::layer_norm_forward(input.dtype(), r.x.data_ptr(), ptr_or_null(r.w), ptr_or_null(r.b), r.out.data_ptr(),
                         r.mean.data_ptr(), r.rstd.data_ptr(), g.M, g.N, eps, cuda_stream(input.device()));
  return {r.out, r.mean, r.rstd};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_cuda(const Tensor& grad_out, const Tensor& input,
                                                                   const Shape& normalized_shape, const Tensor& mean,
                                                                   const Tensor& rstd, const Tensor& weight,
                                                                   const Tensor& bias) {
  const NormGeometry g =
      LayerNormBackward::meta(LayerNormBackward::name, grad_out, input, normalized_shape, mean, rstd, weight, bias);
  const Device device = input.device();
  cuda::CUDAGuard guard(device);
  const NormBackwardBuffers r =
      norm_backward_buffers<CUDACopies, kCUDA>(g, grad_out, input, normalized_shape, mean, rstd, weight, bias);
  kc::layer_norm_backward(input.dtype(), r.dy.data_ptr(), r.x.data_ptr(), r.mu.data_ptr(), r.r.data_ptr(),
                          ptr_or_null(r.w), r.grad_input.data_ptr(), ptr_or_null(r.grad_weight_acc),
                          ptr_or_null(r.grad_bias_acc), g.M, g.N, ptr_or_null(r.workspace), cuda_stream(device));
  return norm_backward_outputs<CUDACopies>(r, weight, bias);
}

std::tuple<Tensor, Tensor> fused_rms_norm_cuda(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                                               double eps) {
  const NormGeometry g = RmsNorm::meta(RmsNorm::name, input, normalized_shape, weight, eps);
  cuda::CUDAGuard guard(input.device());
  const NormForwardBuffers r = norm_forward_buffers<CUDACopies>(g, input, weight, Tensor(), false);
  kc::rms_norm_forward(input.dtype(), r.x.data_ptr(), ptr_or_null(r.w), r.out.data_ptr(), r.rstd.data_ptr(), g.M, g.N,
                       eps, cuda_stream(input.device()));
  return {r.out, r.rstd};
}

std::tuple<Tensor, Tensor> fused_rms_norm_backward_cuda(const Tensor& grad_out, const Tensor& input,
                                                        const Shape& normalized_shape, const Tensor& rstd,
                                                        const Tensor& weight) {
  const NormGeometry g = RmsNormBackward::meta(RmsNormBackward::name, grad_out, input, normalized_shape, rstd, weight);
  const Device device = input.device();
  cuda::CUDAGuard guard(device);
  const NormBackwardBuffers r =
      norm_backward_buffers<CUDACopies, kCUDA>(g, grad_out, input, normalized_shape, Tensor(), rstd, weight, Tensor());
  kc::rms_norm_backward(input.dtype(), r.dy.data_ptr(), r.x.data_ptr(), r.r.data_ptr(), ptr_or_null(r.w),
                        r.grad_input.data_ptr(), ptr_or_null(r.grad_weight_acc), g.M, g.N, ptr_or_null(r.workspace),
                        cuda_stream(device));
  auto [grad_input, grad_weight, unused] = norm_backward_outputs<CUDACopies>(r, weight, Tensor());
  return {grad_input, grad_weight};
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl(LayerNorm::name, REMAT_FN(native_layer_norm_cuda));
  m.impl(LayerNormBackward::name, REMAT_FN(native_layer_norm_backward_cuda));
  m.impl(RmsNorm::name, REMAT_FN(fused_rms_norm_cuda));
  m.impl(RmsNormBackward::name, REMAT_FN(fused_rms_norm_backward_cuda));
}

}  // namespace remat::ops
