// Mirrors torchgen's generated NativeMetaFunctions.h for layer_norm.cpp's ops and the fused
// RMSNorm ops (native_layer_norm, native_layer_norm_backward, _fused_rms_norm,
// _fused_rms_norm_backward): their Defs (ops/structured.h: name, schema, C++ signature, meta
// function), so that each exists once. Their kernels (ops/normalization.cpp,
// ops/cuda/normalization.cpp) and the Meta kernels allocate by ops/norm_buffers.h. layer_norm and
// rms_norm are composites (ops/normalization.cpp).
#pragma once

#include <tuple>

#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

struct structured_native_layer_norm {
  using Sig = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Shape&, const Tensor&, const Tensor&, double);
  static constexpr const char* name = "aten::native_layer_norm";
  static constexpr const char* schema =
      "(Tensor input, int[] normalized_shape, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)";
  static constexpr auto meta = &layer_norm_meta;
};
struct structured_native_layer_norm_backward {
  using Sig = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Shape&, const Tensor&,
                                                 const Tensor&, const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::native_layer_norm_backward";
  static constexpr const char* schema =
      "(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias) "
      "-> (Tensor, Tensor, Tensor)";
  static constexpr auto meta = &layer_norm_backward_meta;
};
struct structured__fused_rms_norm {
  using Sig = std::tuple<Tensor, Tensor>(const Tensor&, const Shape&, const Tensor&, double);
  static constexpr const char* name = "aten::_fused_rms_norm";
  static constexpr const char* schema =
      "(Tensor input, int[] normalized_shape, Tensor? weight, float eps) -> (Tensor, Tensor)";
  static constexpr auto meta = &rms_norm_meta;
};
struct structured__fused_rms_norm_backward {
  using Sig = std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Shape&, const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::_fused_rms_norm_backward";
  static constexpr const char* schema =
      "(Tensor grad_out, Tensor input, int[] normalized_shape, Tensor rstd, Tensor? weight) -> (Tensor, Tensor)";
  static constexpr auto meta = &rms_norm_backward_meta;
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
