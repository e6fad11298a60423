// Mirrors torchgen's generated NativeMetaFunctions.h for layer_norm.cpp's ops and the fused
// RMSNorm ops (native_layer_norm, native_layer_norm_backward, _fused_rms_norm,
// _fused_rms_norm_backward): their Defs (ops/structured.h: name, schema, C++ signature, meta
// function), so that each exists once. Their kernels (ops/normalization.cpp,
// ops/cuda/normalization.cpp) and the Meta kernels allocate by ops/norm_buffers.h. layer_norm and
// rms_norm are composites (ops/normalization.cpp).
#pragma once

#include <tuple>

#include "ops/autograd/derivative_rules.h"
#include "ops/autograd/norm_backward.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

struct structured_native_layer_norm {
  using Sig = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Shape&, const Tensor&, const Tensor&, double);
  static constexpr const char* name = "aten::native_layer_norm";
  static constexpr const char* schema =
      "(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)";
  static constexpr auto meta = &layer_norm_meta;
  // out, mean, rstd = native_layer_norm(input, normalized_shape, weight, bias, eps)
  // input, mean, rstd: read by input's and weight's gradients; weight: by input's (it scales
  // it) and weight's, bias: by bias's (the fused kernel returns a parameter's gradient only for
  // a parameter passed to it)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return with_non_differentiable_outputs(
        rule({arg(0, {0, 2}), arg(2, {0, 2}), arg(3, {3}), result(1, {0, 2}), result(2, {0, 2})}, [](C c) -> G {
          // bias's gradient alone is grad summed over the rows: no saved tensor needed
          if (!c.needs(0) && !c.needs(2))
            return {Tensor(), Tensor(), if_needed(c, 3, [&] { return sum_to(c.grad(0), c.meta(3)); })};
          // the fused kernel computes bias's gradient only for a bias passed to it
          auto [dx, dw, db] = native_layer_norm_backward(c.grad(0), c.input(0), c.ints(1), c.result(1), c.result(2),
                                                         c.input(2), c.needs(3) ? c.input(3) : Tensor());
          return {dx, dw, db};
        }),
        {1, 2});
  }
};
struct structured_native_layer_norm_backward {
  using Sig = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Shape&, const Tensor&,
                                                 const Tensor&, const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::native_layer_norm_backward";
  static constexpr const char* schema =
      "(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias) "
      "-> (Tensor, Tensor, Tensor)";
  static constexpr auto meta = &layer_norm_backward_meta;
  // (dx, dw, db) = native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias);
  // mean and rstd get no gradient: input's accounts for them (ops/autograd/norm_backward.cpp)
  // (bias is read by no gradient: only whether it was given matters)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({arg(0, {1, 5}), arg(1, {0, 1, 5}), arg(3, {0, 1, 5}), arg(4, {0, 1, 5}), arg(5, {0, 1, 5})},
                [](C c) -> G {
      if (!c.needs(0) && !c.needs(1) && !c.needs(5)) return G(6);  // mean's or rstd's: none
      NormDoubleBackward d = norm_double_backward(
          /*center=*/true, c.needs(1) || c.needs(5) ? c.input(0) : Tensor(), c.input(1), c.ints(2), c.input(3),
          c.input(4), c.input(5), c.grad(0), c.is_none(5) ? Tensor() : c.grad(1),
          c.is_none(6) ? Tensor() : c.grad(2), c.needs(0), c.needs(1), c.needs(5));
      return {d.grad_grad_out, d.grad_input, Tensor(), Tensor(), d.grad_weight, Tensor()};
    });
  }
};
struct structured__fused_rms_norm {
  using Sig = std::tuple<Tensor, Tensor>(const Tensor&, const Shape&, const Tensor&, double);
  static constexpr const char* name = "aten::_fused_rms_norm";
  static constexpr const char* schema =
      "(Tensor input, int[] normalized_shape, Tensor? weight, float eps) -> (Tensor, Tensor)";
  static constexpr auto meta = &rms_norm_meta;
  // out, rstd = _fused_rms_norm(input, normalized_shape, weight, eps)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return with_non_differentiable_outputs(rule({arg(0, {0, 2}), arg(2, {0, 2}), result(1, {0, 2})}, [](C c) -> G {
      auto [dx, dw] = _fused_rms_norm_backward(c.grad(0), c.input(0), c.ints(1), c.result(1), c.input(2));
      return {dx, dw};
    }), {1});
  }
};
struct structured__fused_rms_norm_backward {
  using Sig = std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Shape&, const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::_fused_rms_norm_backward";
  static constexpr const char* schema =
      "(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor rstd, Tensor? weight) -> (Tensor, Tensor)";
  static constexpr auto meta = &rms_norm_backward_meta;
  // (dx, dw) = _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({arg(0, {1, 4}), arg(1, {0, 1, 4}), arg(3, {0, 1, 4}), arg(4, {0, 1, 4})}, [](C c) -> G {
      if (!c.needs(0) && !c.needs(1) && !c.needs(4)) return G(4);  // rstd's: none
      NormDoubleBackward d = norm_double_backward(
          /*center=*/false, c.needs(1) || c.needs(4) ? c.input(0) : Tensor(), c.input(1), c.ints(2), Tensor(),
          c.input(3), c.input(4), c.grad(0), c.is_none(4) ? Tensor() : c.grad(1), Tensor(), c.needs(0), c.needs(1),
          c.needs(4));
      return {d.grad_grad_out, d.grad_input, Tensor(), d.grad_weight};
    });
  }
};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_normalization_def(const F& f) {
  f(structured::DefTag<structured_native_layer_norm>{});
  f(structured::DefTag<structured_native_layer_norm_backward>{});
  f(structured::DefTag<structured__fused_rms_norm>{});
  f(structured::DefTag<structured__fused_rms_norm_backward>{});
}

}  // namespace remat::ops
