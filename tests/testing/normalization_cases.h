// The normalization calls whose allocations the drift tests of ops/normalization_defs.h compare
// between a backend and a Meta dry run (tests/ops/normalization_defs_test.cpp,
// tests/ops/cuda/normalization_defs_test.cpp).
#pragma once

#include <tuple>
#include <vector>

#include "remat.h"
#include "tests/testing/structured_defs.h"

namespace remat::testing {

// native_layer_norm_backward on [4, 6] normalised over [6], input and parameters of `dtype`.
inline Tensor layer_norm_backward_of(Device d, ScalarType dtype, bool params) {
  const Tensor w = params ? on(d, {6}, dtype) : Tensor(), b = params ? on(d, {6}, dtype) : Tensor();
  const ScalarType stat = dtype == kDouble ? kDouble : kFloat;
  return std::get<0>(native_layer_norm_backward(on(d, {4, 6}, dtype), on(d, {4, 6}, dtype), {6}, on(d, {4, 1}, stat),
                                                on(d, {4, 1}, stat), w, b));
}
inline Tensor rms_norm_backward_of(Device d, ScalarType dtype, bool weight) {
  return std::get<0>(_fused_rms_norm_backward(on(d, {4, 6}, dtype), on(d, {4, 6}, dtype), {6},
                                              on(d, {4, 1}, kFloat), weight ? on(d, {6}, dtype) : Tensor()));
}

inline const std::vector<AllocationCase>& normalization_cases() {
  static const std::vector<AllocationCase> cases = {
      {"layer_norm", [](Device d) { return std::get<0>(native_layer_norm(on(d, {4, 6}), {6}, on(d, {6}), on(d, {6}), 1e-5)); }},
      // a strided input is read through a contiguous copy
      {"layer_norm of a transposed input",
       [](Device d) { return std::get<0>(native_layer_norm(transpose(on(d, {6, 4}), 0, 1), {6}, on(d, {6}), Tensor(), 1e-5)); }},
      // BFloat16 parameters are read in Float (the statistic dtype): converted copies
      {"layer_norm, BFloat16",
       [](Device d) {
         return std::get<0>(native_layer_norm(on(d, {4, 6}, kBFloat16), {6}, on(d, {6}, kBFloat16), on(d, {6}, kBFloat16), 1e-5));
       }},
      {"layer_norm backward", [](Device d) { return layer_norm_backward_of(d, kFloat, true); }},
      {"layer_norm backward, no parameters", [](Device d) { return layer_norm_backward_of(d, kFloat, false); }},
      // the parameters' gradients computed in Float, returned in BFloat16
      {"layer_norm backward, BFloat16", [](Device d) { return layer_norm_backward_of(d, kBFloat16, true); }},
      {"rms_norm", [](Device d) { return std::get<0>(_fused_rms_norm(on(d, {4, 6}), {6}, on(d, {6}), 1e-6)); }},
      {"rms_norm backward", [](Device d) { return rms_norm_backward_of(d, kFloat, true); }},
      {"rms_norm backward, no weight", [](Device d) { return rms_norm_backward_of(d, kFloat, false); }},
      {"rms_norm backward, BFloat16", [](Device d) { return rms_norm_backward_of(d, kBFloat16, true); }},
  };
  return cases;
}

}  // namespace remat::testing
