// Mirrors torch/csrc/autograd/FunctionsManual.cpp (layer_norm_double_backward), derived for both
// layer norm and RMS norm.
//
// Per row of N normalised elements (all means below are over the row):
//   xhat = (x - mean) * r  (layer norm) or x * r (RMS norm);  gh = grad_out * weight
//   P v  = v - mean(v) - xhat * mean(v * xhat)   (RMS norm: without the "- mean(v)" term)
//   first-order backward:  grad_input = r * P gh,  grad_weight = sum_rows grad_out * xhat,
//                          grad_bias = sum_rows grad_out
// P is symmetric and d xhat / d x = r P, d r / d x = -r^2 xhat / N, which gives, for incoming
// gradients ggI, ggW, ggB of (grad_input, grad_weight, grad_bias):
//   d/d grad_out = weight * r * P ggI + ggW * xhat + ggB
//   d/d weight   = sum_rows grad_out * r * P ggI
//   d/d input    = r * P(ggW * grad_out)
//                  - r^2 * (xhat * (S - c * a) + P(c * ggI + a * gh))
//     with c = mean(gh * xhat), a = mean(ggI * xhat), S = mean(ggI * gh) - mean(ggI) * mean(gh)
//     (RMS norm: S = mean(ggI * gh)).
#include "ops/autograd/norm_backward.h"

#include "ops/functions.h"
#include "ops/op_utils.h"

namespace remat::ops::autograd {

NormDoubleBackward norm_double_backward(bool center, const Tensor& grad_out, const Tensor& input,
                                        const Shape& normalized_shape, const Tensor& mean_stat, const Tensor& rstd_stat,
                                        const Tensor& weight, const Tensor& ggI, const Tensor& ggW, const Tensor& ggB,
                                        bool need_grad_out, bool need_input, bool need_weight) {
  const size_t lead = input.sizes().size() - normalized_shape.size();
  const int64_t M = prod(input.sizes(), 0, lead), N = prod(normalized_shape, 0, normalized_shape.size());
  const ScalarType dtype = input.dtype();
  auto rows = [&](const Tensor& t) { return reshape(t, {M, N}); };
  auto row_mean = [](const Tensor& t) { return mean(t, {1}, /*keepdim=*/true); };
  auto param_row = [&](const Tensor& t) { return reshape(t, {1, N}); };

  Tensor x = rows(input), gg_in = rows(ggI);
  Tensor r = reshape(rstd_stat.to(dtype), {M, 1});  // float statistics of a BFloat16 input
  Tensor xhat = center ? mul(sub(x, reshape(mean_stat.to(dtype), {M, 1})), r) : mul(x, r);
  Tensor w = weight.defined() ? param_row(weight) : Tensor();
  // grad_out's values are read only by input's and weight's gradients (it is saved only for them)
  Tensor g = need_input || need_weight ? rows(grad_out) : Tensor();
  auto project = [&](const Tensor& v) {  // P v
    Tensor centred = center ? sub(v, row_mean(v)) : v;
    return sub(centred, mul(xhat, row_mean(mul(v, xhat))));
  };

  NormDoubleBackward out;
  Tensor r_p_ggI;  // r * P ggI: the first-order backward applied to ggI
  if (need_grad_out || (need_weight && w.defined())) r_p_ggI = mul(project(gg_in), r);
  if (need_grad_out) {
    Tensor d = w.defined() ? mul(r_p_ggI, w) : r_p_ggI;
    if (ggW.defined()) d = add(d, mul(xhat, param_row(ggW)));
    if (ggB.defined()) d = add(d, param_row(ggB));
    out.grad_grad_out = reshape(d, input.sizes()).to(dtype);  // grad_out's shape and dtype
  }
  if (need_weight && w.defined()) {
    out.grad_weight = reshape(sum(mul(g, r_p_ggI), {0}), normalized_shape).to(weight.dtype());
  }
  if (need_input) {
    Tensor gh = w.defined() ? mul(g, w) : g;
    Tensor S = row_mean(mul(gg_in, gh));
    if (center) S = sub(S, mul(row_mean(gg_in), row_mean(gh)));
    Tensor c = row_mean(mul(gh, xhat)), a = row_mean(mul(gg_in, xhat));
    Tensor inner = add(mul(xhat, sub(S, mul(c, a))), project(add(mul(gg_in, c), mul(gh, a))));
    Tensor d = neg(mul(inner, mul(r, r)));
    if (ggW.defined()) d = add(d, mul(project(mul(g, param_row(ggW))), r));
    out.grad_input = reshape(d, input.sizes()).to(input.dtype());
  }
  return out;
}

}  // namespace remat::ops::autograd
