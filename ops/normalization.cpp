// Mirrors ATen/native/layer_norm.cpp (native_layer_norm, native_layer_norm_backward, layer_norm)
// and the fused RMSNorm ops (_fused_rms_norm, _fused_rms_norm_backward, rms_norm). The loops are
// in kernels/cpu/norm.h.
//
// mean and rstd have the input's leading dims followed by size-1 normalised dims, as PyTorch's,
// and are float32 for a BFloat16/Half input (float64 for float64). Parameters are cast to that
// statistic dtype before the kernel runs, so a BFloat16 input may have Float weights (PyTorch's
// "mixed type" layer norm).
#include <string>
#include <tuple>

#include "engine/dispatch/library.h"
#include "kernels/cpu/norm.h"
#include "ops/composite.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/functions.h"
#include "ops/cuda_temporaries.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace remat::ops {

// Meta functions, shared by every backend (declared in ops/meta.h).

ScalarType stat_dtype_for(ScalarType input) { return input == kDouble ? kDouble : kFloat; }

namespace {

// "[*, 3, 4]": any leading dims, then normalized_shape (PyTorch's wording).
std::string star_shape(const Shape& normalized_shape) {
  std::string s = "[*";
  for (int64_t d : normalized_shape) s += ", " + std::to_string(d);
  return s + "]";
}

}  // namespace

NormGeometry norm_geometry(const char* op, const Tensor& input, const Shape& normalized_shape) {
  check_defined(op, input, "input");
  check_floating(op, input, "input");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  REMAT_CHECK(k >= 1, op,
              ": Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, "
              "but got normalized_shape = ",
              normalized_shape);
  bool matches = input.dim() >= k;
  for (int64_t i = 0; matches && i < k; ++i) matches = input.sizes()[input.dim() - k + i] == normalized_shape[i];
  REMAT_CHECK(matches, op, ": Given normalized_shape=", normalized_shape, ", expected input with shape ",
              star_shape(normalized_shape), ", but got input of size", input.sizes());
  NormGeometry g;
  const size_t lead = static_cast<size_t>(input.dim() - k);
  g.M = prod(input.sizes(), 0, lead);
  g.N = prod(normalized_shape, 0, normalized_shape.size());
  g.stat_shape.assign(input.sizes().begin(), input.sizes().begin() + static_cast<std::ptrdiff_t>(lead));
  g.stat_shape.resize(static_cast<size_t>(input.dim()), 1);
  g.stat_dtype = stat_dtype_for(input.dtype());
  return g;
}

namespace {

// weight/bias: normalized_shape, on the input's device, the input's dtype or (mixed) Float.
void check_param(const char* op, const Tensor& input, const Tensor& param, const char* name,
                 const Shape& normalized_shape) {
  if (!param.defined()) return;
  REMAT_CHECK(param.sizes() == normalized_shape, op, ": Expected ", name,
              " to be of same shape as normalized_shape, but got ", name, " of shape ", param.sizes(),
              " and normalized_shape = ", normalized_shape);
  common_device(op, {&input, &param});
  REMAT_CHECK(param.dtype() == input.dtype() ||
                  (param.dtype() == kFloat && (input.dtype() == kBFloat16 || input.dtype() == kHalf)),
              op, ": expected ", name, " to have dtype ", toString(input.dtype()),
              " (the input's; Float is also accepted for a BFloat16/Half input), but got ", toString(param.dtype()));
}

// The statistics mean/rstd handed to a backward: numel M and floating; their dtype is converted.
void check_stat(const char* op, const Tensor& stat, const char* name, const NormGeometry& g, const Tensor& input) {
  check_defined(op, stat, name);
  check_floating(op, stat, name);
  common_device(op, {&input, &stat});
  REMAT_CHECK(stat.numel() == g.M, op, ": expected ", name, " to have ", g.M, " elements (one per normalised row of ",
              "the input), but got shape ", stat.sizes());
}

void check_grad_out(const char* op, const Tensor& grad_out, const Tensor& input) {
  check_defined(op, grad_out, "grad_out");
  common_device(op, {&grad_out, &input});
  REMAT_CHECK(grad_out.sizes() == input.sizes(), op, ": grad_out of shape ", grad_out.sizes(),
              " does not match input of shape ", input.sizes());
  check_same_dtype(op, grad_out, input);
}

}  // namespace

NormGeometry layer_norm_meta(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                             const Tensor& bias) {
  const char* op = "aten::native_layer_norm";
  NormGeometry g = norm_geometry(op, input, normalized_shape);
  check_param(op, input, weight, "weight", normalized_shape);
  check_param(op, input, bias, "bias", normalized_shape);
  return g;
}

NormGeometry layer_norm_backward_meta(const Tensor& grad_out, const Tensor& input, const Shape& normalized_shape,
                                      const Tensor& mean, const Tensor& rstd, const Tensor& weight,
                                      const Tensor& bias) {
  const char* op = "aten::native_layer_norm_backward";
  NormGeometry g = norm_geometry(op, input, normalized_shape);
  check_grad_out(op, grad_out, input);
  check_stat(op, mean, "mean", g, input);
  check_stat(op, rstd, "rstd", g, input);
  check_param(op, input, weight, "weight", normalized_shape);
  check_param(op, input, bias, "bias", normalized_shape);
  return g;
}

NormGeometry rms_norm_meta(const Tensor& input, const Shape& normalized_shape, const Tensor& weight) {
  const char* op = "aten::_fused_rms_norm";
  NormGeometry g = norm_geometry(op, input, normalized_shape);
  check_param(op, input, weight, "weight", normalized_shape);
  return g;
}

NormGeometry rms_norm_backward_meta(const Tensor& grad_out, const Tensor& input, const Shape& normalized_shape,
                                    const Tensor& rstd, const Tensor& weight) {
  const char* op = "aten::_fused_rms_norm_backward";
  NormGeometry g = norm_geometry(op, input, normalized_shape);
  check_grad_out(op, grad_out, input);
  check_stat(op, rstd, "rstd", g, input);
  check_param(op, input, weight, "weight", normalized_shape);
  return g;
}

namespace {

namespace cpu = kernels::cpu;

// A parameter or statistic as a contiguous tensor of the statistic dtype (undefined stays undefined).
Tensor as_stat(const Tensor& t, ScalarType dtype) {
  return t.defined() ? contiguous_cpu(cast_cpu(t, dtype)) : Tensor();
}
template <class A>
A* ptr_or_null(const Tensor& t) {
  return t.defined() ? t.data_ptr<A>() : nullptr;
}

// A parameter's gradient: computed in the statistic dtype, returned in the parameter's dtype.
Tensor param_grad(const Tensor& acc, const Tensor& param) { return cast_cpu(acc, param.dtype()); }

Tensor stat_empty(const NormGeometry& g, Device device) { return make_empty(g.stat_shape, g.stat_dtype, device); }
Device meta_device() { return Device{kMeta}; }

// ---------------------------------------------------------------------------------------------
// layer norm
// ---------------------------------------------------------------------------------------------

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_cpu(const Tensor& input, const Shape& normalized_shape,
                                                         const Tensor& weight, const Tensor& bias, double eps) {
  NormGeometry g = layer_norm_meta(input, normalized_shape, weight, bias);
  Tensor out = make_empty(input.sizes(), input.dtype(), input.device());
  Tensor mean = stat_empty(g, input.device()), rstd = stat_empty(g, input.device());
  Tensor x = contiguous_cpu(input);
  Tensor w = as_stat(weight, g.stat_dtype), b = as_stat(bias, g.stat_dtype);
  REMAT_DISPATCH_FLOATING_TYPES(input.dtype(), "aten::native_layer_norm", [&] {
    using A = cpu::acc_t<scalar_t>;
    cpu::layer_norm_forward<scalar_t>(out.data_ptr<scalar_t>(), mean.data_ptr<A>(), rstd.data_ptr<A>(),
                                      x.data_ptr<scalar_t>(), ptr_or_null<A>(w), ptr_or_null<A>(b), g.M, g.N, eps);
  });
  return {out, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_meta(const Tensor& input, const Shape& normalized_shape,
                                                          const Tensor& weight, const Tensor& bias, double) {
  NormGeometry g = layer_norm_meta(input, normalized_shape, weight, bias);
  return {make_empty(input.sizes(), input.dtype(), meta_device()), stat_empty(g, meta_device()),
          stat_empty(g, meta_device())};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_cpu(const Tensor& grad_out, const Tensor& input,
                                                                  const Shape& normalized_shape, const Tensor& mean,
                                                                  const Tensor& rstd, const Tensor& weight,
                                                                  const Tensor& bias) {
  NormGeometry g = layer_norm_backward_meta(grad_out, input, normalized_shape, mean, rstd, weight, bias);
  Tensor grad_input = make_empty(input.sizes(), input.dtype(), input.device());
  Tensor grad_weight_acc = weight.defined() ? make_empty(normalized_shape, g.stat_dtype, input.device()) : Tensor();
  Tensor grad_bias_acc = bias.defined() ? make_empty(normalized_shape, g.stat_dtype, input.device()) : Tensor();
  Tensor dy = contiguous_cpu(grad_out), x = contiguous_cpu(input);
  Tensor mu = as_stat(mean, g.stat_dtype), r = as_stat(rstd, g.stat_dtype), w = as_stat(weight, g.stat_dtype);
  REMAT_DISPATCH_FLOATING_TYPES(input.dtype(), "aten::native_layer_norm_backward", [&] {
    using A = cpu::acc_t<scalar_t>;
    cpu::layer_norm_backward<scalar_t>(grad_input.data_ptr<scalar_t>(), ptr_or_null<A>(grad_weight_acc),
                                       ptr_or_null<A>(grad_bias_acc), dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),
                                       mu.data_ptr<A>(), r.data_ptr<A>(), ptr_or_null<A>(w), g.M, g.N);
  });
  return {grad_input, weight.defined() ? param_grad(grad_weight_acc, weight) : Tensor(),
          bias.defined() ? param_grad(grad_bias_acc, bias) : Tensor()};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward_meta(const Tensor& grad_out, const Tensor& input,
                                                                   const Shape& normalized_shape, const Tensor& mean,
                                                                   const Tensor& rstd, const Tensor& weight,
                                                                   const Tensor& bias) {
  NormGeometry g = layer_norm_backward_meta(grad_out, input, normalized_shape, mean, rstd, weight, bias);
  auto like = [](const Tensor& t) { return t.defined() ? make_empty(t.sizes(), t.dtype(), meta_device()) : Tensor(); };
  Tensor grad_input = like(input), grad_weight = like(weight), grad_bias = like(bias);
  if (cuda_temporaries::imitating())
    cuda_temporaries::layer_norm_backward(grad_out, input, mean, rstd, weight, bias, g.stat_dtype, g.M, g.N);
  return {grad_input, grad_weight, grad_bias};
}

Tensor layer_norm_composite(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                            const Tensor& bias, double eps) {
  return std::get<0>(native_layer_norm(input, normalized_shape, weight, bias, eps));
}

// ---------------------------------------------------------------------------------------------
// RMS norm
// ---------------------------------------------------------------------------------------------

std::tuple<Tensor, Tensor> fused_rms_norm_cpu(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                                              double eps) {
  NormGeometry g = rms_norm_meta(input, normalized_shape, weight);
  Tensor out = make_empty(input.sizes(), input.dtype(), input.device());
  Tensor rstd = stat_empty(g, input.device());
  Tensor x = contiguous_cpu(input), w = as_stat(weight, g.stat_dtype);
  REMAT_DISPATCH_FLOATING_TYPES(input.dtype(), "aten::_fused_rms_norm", [&] {
    using A = cpu::acc_t<scalar_t>;
    cpu::rms_norm_forward<scalar_t>(out.data_ptr<scalar_t>(), rstd.data_ptr<A>(), x.data_ptr<scalar_t>(),
                                    ptr_or_null<A>(w), g.M, g.N, eps);
  });
  return {out, rstd};
}

std::tuple<Tensor, Tensor> fused_rms_norm_meta(const Tensor& input, const Shape& normalized_shape, const Tensor& weight,
                                               double) {
  NormGeometry g = rms_norm_meta(input, normalized_shape, weight);
  return {make_empty(input.sizes(), input.dtype(), meta_device()), stat_empty(g, meta_device())};
}

std::tuple<Tensor, Tensor> fused_rms_norm_backward_cpu(const Tensor& grad_out, const Tensor& input,
                                                       const Shape& normalized_shape, const Tensor& rstd,
                                                       const Tensor& weight) {
  NormGeometry g = rms_norm_backward_meta(grad_out, input, normalized_shape, rstd, weight);
  Tensor grad_input = make_empty(input.sizes(), input.dtype(), input.device());
  Tensor grad_weight_acc = weight.defined() ? make_empty(normalized_shape, g.stat_dtype, input.device()) : Tensor();
  Tensor dy = contiguous_cpu(grad_out), x = contiguous_cpu(input);
  Tensor r = as_stat(rstd, g.stat_dtype), w = as_stat(weight, g.stat_dtype);
  REMAT_DISPATCH_FLOATING_TYPES(input.dtype(), "aten::_fused_rms_norm_backward", [&] {
    using A = cpu::acc_t<scalar_t>;
    cpu::rms_norm_backward<scalar_t>(grad_input.data_ptr<scalar_t>(), ptr_or_null<A>(grad_weight_acc),
                                     dy.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), r.data_ptr<A>(),
                                     ptr_or_null<A>(w), g.M, g.N);
  });
  return {grad_input, weight.defined() ? param_grad(grad_weight_acc, weight) : Tensor()};
}

std::tuple<Tensor, Tensor> fused_rms_norm_backward_meta(const Tensor& grad_out, const Tensor& input,
                                                        const Shape& normalized_shape, const Tensor& rstd,
                                                        const Tensor& weight) {
  rms_norm_backward_meta(grad_out, input, normalized_shape, rstd, weight);
  return {make_empty(input.sizes(), input.dtype(), meta_device()),
          weight.defined() ? make_empty(weight.sizes(), weight.dtype(), meta_device()) : Tensor()};
}

Tensor rms_norm_composite(const Tensor& input, const Shape& normalized_shape, const Tensor& weight, double eps) {
  return std::get<0>(_fused_rms_norm(input, normalized_shape, weight, eps));
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("native_layer_norm", REMAT_FN(native_layer_norm_cpu));
  m.impl("native_layer_norm_backward", REMAT_FN(native_layer_norm_backward_cpu));
  m.impl("_fused_rms_norm", REMAT_FN(fused_rms_norm_cpu));
  m.impl("_fused_rms_norm_backward", REMAT_FN(fused_rms_norm_backward_cpu));
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("native_layer_norm", REMAT_FN(native_layer_norm_meta));
  m.impl("native_layer_norm_backward", REMAT_FN(native_layer_norm_backward_meta));
  m.impl("_fused_rms_norm", REMAT_FN(fused_rms_norm_meta));
  m.impl("_fused_rms_norm_backward", REMAT_FN(fused_rms_norm_backward_meta));
}
REMAT_LIBRARY_FRAGMENT(aten, m) {
  impl_composite(m, "layer_norm", REMAT_FN(layer_norm_composite));
  impl_composite(m, "rms_norm", REMAT_FN(rms_norm_composite));
}

}  // namespace remat::ops
