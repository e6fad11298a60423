// Mirrors ATen/native/cuda/layer_norm_kernel.cu registration (native_layer_norm,
// native_layer_norm_backward) and the fused RMSNorm (_fused_rms_norm and its backward) on CUDA,
// for the schemas of ops/native_functions.cpp. layer_norm and rms_norm themselves are
// composites over these.
//
// As PyTorch: mean and rstd have the input's leading dims followed by ones for the normalized
// dims ([*, 1, ..., 1]) and the accumulation dtype (float for 16-bit inputs). The backward
// returns undefined gradients for an undefined weight or bias. When ops/ gains the CPU kernels'
// meta functions for these ops, the checks below should call them instead.
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/normalization.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

ScalarType stats_dtype(ScalarType t) { return t == kDouble ? kDouble : kFloat; }

struct NormShape {
  int64_t rows, cols;
  Shape stats_sizes;  // [*, 1, ..., 1]
};

// ", 4, 5" for [4, 5]: PyTorch's "[*, 4, 5]" in the shape error.
std::string trailing_dims(const Shape& shape) {
  std::string s;
  for (int64_t d : shape) s += ", " + std::to_string(d);
  return s;
}

NormShape norm_meta(const char* op, const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                    const Tensor& bias) {
  check_defined(op, input, "input");
  check_floating(op, input, "input");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  const int64_t axis = input.dim() - k;
  bool ok = k >= 1 && axis >= 0;
  for (int64_t i = 0; ok && i < k; ++i) ok = input.sizes()[axis + i] == normalized_shape[i];
  REMAT_CHECK(ok, op, ": Given normalized_shape=", normalized_shape, ", expected input with shape [*",
              trailing_dims(normalized_shape), "], but got input of size", input.sizes());
  REMAT_CHECK(!weight.defined() || weight.sizes() == normalized_shape, op,
              ": Expected weight to be of same shape as normalized_shape, but got weight of shape ", weight.sizes(),
              " and normalized_shape = ", normalized_shape);
  REMAT_CHECK(!bias.defined() || bias.sizes() == normalized_shape, op,
              ": Expected bias to be of same shape as normalized_shape, but got bias of shape ", bias.sizes(),
              " and normalized_shape = ", normalized_shape);
  common_device(op, {&input, &weight, &bias});
  NormShape s;
  s.rows = prod(input.sizes(), 0, static_cast<size_t>(axis));
  s.cols = shape_numel(normalized_shape);
  s.stats_sizes.assign(input.sizes().begin(), input.sizes().begin() + axis);
  s.stats_sizes.resize(static_cast<size_t>(input.dim()), 1);
  return s;
}

// An optional parameter in the input's dtype, contiguous (undefined stays undefined).
Tensor param_as(const Tensor& p, ScalarType dtype) { return p.defined() ? contiguous_cuda(cast_cuda(p, dtype)) : p; }
const void* ptr_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }
void* mut_ptr_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_cuda(const Tensor& input, const Shape& normalized_shape,
                                                          const Tensor& weight, const Tensor& bias, double eps) {
  const char* op = "aten::native_layer_norm";
  NormShape s = norm_meta(op, input, normalized_shape, weight, bias);
  cuda::CUDAGuard guard(input.device());
  Tensor x = contiguous_cuda(input);
  Tensor w = param_as(weight, input.dtype()), b = param_as(bias, input.dtype());
  Tensor out = make_empty(input.sizes(), input.dtype(), input.device());
  Tensor mean = make_empty(s.stats_sizes, stats_dtype(input.dtype()), input.device());
  Tensor rstd = make_empty(s.stats_sizes, stats_dtype(input.dtype()), input.device());
  kc::layer_norm_forward(input.dtype(), x.data_ptr(), ptr_or_null(w), ptr_or_null(b), out.data_ptr(), mean.data_ptr(),
                         rstd.data_ptr(), s.rows, s.cols, eps, cuda_stream(input.device()));
  return {out, mean, rstd};
}

// A gradient computed in the input's dtype, returned in the parameter's.
Tensor in_dtype_of(const Tensor& grad, const Tensor& param) {
  return grad.defined() && grad.dtype() != param.dtype() ? cast_cuda(grad, param.dtype()) : grad;
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_cuda(const Tensor& grad_out, const Tensor& input,
                                                                   const Shape& normalized_shape, const Tensor& mean,
                                                                   const Tensor& rstd, const Tensor& weight,
                                                                   const Tensor& bias) {
  const char* op = "aten::native_layer_norm_backward";
  NormShape s = norm_meta(op, input, normalized_shape, weight, bias);
  check_defined(op, grad_out, "grad_out");
  check_defined(op, mean, "mean");
  check_defined(op, rstd, "rstd");
  common_device(op, {&grad_out, &input, &mean, &rstd});
  REMAT_CHECK(grad_out.sizes() == input.sizes(), op, ": grad_out of shape ", grad_out.sizes(),
              " does not match input of shape ", input.sizes());
  REMAT_CHECK(mean.numel() == s.rows && rstd.numel() == s.rows, op, ": mean and rstd must have ", s.rows,
              " elements (got ", mean.numel(), " and ", rstd.numel(), ")");
  cuda::CUDAGuard guard(input.device());
  const ScalarType dt = input.dtype();
  Tensor x = contiguous_cuda(input), g = contiguous_cuda(cast_cuda(grad_out, dt));
  Tensor mu = contiguous_cuda(cast_cuda(mean, stats_dtype(dt))), rs = contiguous_cuda(cast_cuda(rstd, stats_dtype(dt)));
  Tensor w = param_as(weight, dt);
  Tensor dx = make_empty(input.sizes(), dt, input.device());
  Tensor dw = weight.defined() ? make_empty(normalized_shape, dt, input.device()) : Tensor();
  Tensor db = bias.defined() ? make_empty(normalized_shape, dt, input.device()) : Tensor();
  Tensor ws = (dw.defined() || db.defined())
                  ? cuda_workspace(kc::norm_backward_workspace_bytes(dt, s.rows, s.cols), input.device())
                  : Tensor();
  kc::layer_norm_backward(dt, g.data_ptr(), x.data_ptr(), mu.data_ptr(), rs.data_ptr(), ptr_or_null(w), dx.data_ptr(),
                          mut_ptr_or_null(dw), mut_ptr_or_null(db), s.rows, s.cols, mut_ptr_or_null(ws),
                          cuda_stream(input.device()));
  return {dx, in_dtype_of(dw, weight), in_dtype_of(db, bias)};
}

std::tuple<Tensor, Tensor> fused_rms_norm_cuda(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                                               double eps) {
  const char* op = "aten::_fused_rms_norm";
  NormShape s = norm_meta(op, input, normalized_shape, weight, Tensor());
  cuda::CUDAGuard guard(input.device());
  Tensor x = contiguous_cuda(input);
  Tensor w = param_as(weight, input.dtype());
  Tensor out = make_empty(input.sizes(), input.dtype(), input.device());
  Tensor rstd = make_empty(s.stats_sizes, stats_dtype(input.dtype()), input.device());
  kc::rms_norm_forward(input.dtype(), x.data_ptr(), ptr_or_null(w), out.data_ptr(), rstd.data_ptr(), s.rows, s.cols,
                       eps, cuda_stream(input.device()));
  return {out, rstd};
}

std::tuple<Tensor, Tensor> fused_rms_norm_backward_cuda(const Tensor& grad_out, const Tensor& input,
                                                        const Shape& normalized_shape, const Tensor& rstd,
                                                        const Tensor& weight) {
  const char* op = "aten::_fused_rms_norm_backward";
  NormShape s = norm_meta(op, input, normalized_shape, weight, Tensor());
  check_defined(op, grad_out, "grad_out");
  check_defined(op, rstd, "rstd");
  common_device(op, {&grad_out, &input, &rstd});
  REMAT_CHECK(grad_out.sizes() == input.sizes(), op, ": grad_out of shape ", grad_out.sizes(),
              " does not match input of shape ", input.sizes());
  REMAT_CHECK(rstd.numel() == s.rows, op, ": rstd must have ", s.rows, " elements (got ", rstd.numel(), ")");
  cuda::CUDAGuard guard(input.device());
  const ScalarType dt = input.dtype();
  Tensor x = contiguous_cuda(input), g = contiguous_cuda(cast_cuda(grad_out, dt));
  Tensor rs = contiguous_cuda(cast_cuda(rstd, stats_dtype(dt)));
  Tensor w = param_as(weight, dt);
  Tensor dx = make_empty(input.sizes(), dt, input.device());
  Tensor dw = weight.defined() ? make_empty(normalized_shape, dt, input.device()) : Tensor();
  Tensor ws = dw.defined() ? cuda_workspace(kc::norm_backward_workspace_bytes(dt, s.rows, s.cols), input.device())
                           : Tensor();
  kc::rms_norm_backward(dt, g.data_ptr(), x.data_ptr(), rs.data_ptr(), ptr_or_null(w), dx.data_ptr(),
                        mut_ptr_or_null(dw), s.rows, s.cols, mut_ptr_or_null(ws), cuda_stream(input.device()));
  return {dx, in_dtype_of(dw, weight)};
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("native_layer_norm", REMAT_FN(native_layer_norm_cuda));
  m.impl("native_layer_norm_backward", REMAT_FN(native_layer_norm_backward_cuda));
  m.impl("_fused_rms_norm", REMAT_FN(fused_rms_norm_cuda));
  m.impl("_fused_rms_norm_backward", REMAT_FN(fused_rms_norm_backward_cuda));
}

}  // namespace remat::ops
