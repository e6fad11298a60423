// The softmax calls whose allocations the drift tests of ops/softmax_defs.h compare between a
// backend and a Meta dry run (tests/ops/softmax_defs_test.cpp, tests/ops/cuda/softmax_defs_test.cpp).
#pragma once

#include <vector>

#include "remat.h"
#include "tests/testing/structured_defs.h"

namespace remat::testing {

inline const std::vector<AllocationCase>& softmax_cases() {
  static const std::vector<AllocationCase> cases = {
      {"softmax", [](Device d) { return softmax(on(d, {2, 3, 5}), -1); }},
      {"_softmax_backward_data", [](Device d) { return _softmax_backward_data(on(d, {2, 3, 5}), on(d, {2, 3, 5}), -1); }},
      // the attention's causal mask: [L, S], shared by every batch and head (mask_type 0)
      {"_masked_softmax, an [L, S] mask",
       [](Device d) { return _masked_softmax(on(d, {2, 3, 4, 5}), on(d, {4, 5}, kBool), -1, 0); }},
      {"_masked_softmax, a mask of the input's shape",
       [](Device d) { return _masked_softmax(on(d, {6, 5}), on(d, {6, 5}, kBool)); }},
      {"_masked_softmax, BFloat16",
       [](Device d) { return _masked_softmax(on(d, {2, 3, 4, 5}, kBFloat16), on(d, {4, 5}, kBool), 3, 0); }},
      // strided operands are read through contiguous copies
      {"_masked_softmax of a transposed input and mask",
       [](Device d) { return _masked_softmax(transpose(on(d, {5, 6}), 0, 1), transpose(on(d, {5, 6}, kBool), 0, 1)); }},
      {"_masked_softmax_backward, an [L, S] mask",
       [](Device d) {
         return _masked_softmax_backward(on(d, {2, 3, 4, 5}), on(d, {2, 3, 4, 5}), on(d, {4, 5}, kBool), -1);
       }},
      {"_masked_softmax_backward of a transposed gradient",
       [](Device d) {
         return _masked_softmax_backward(transpose(on(d, {5, 6}), 0, 1), on(d, {6, 5}), on(d, {6, 5}, kBool));
       }},
      {"_masked_softmax_backward, BFloat16",
       [](Device d) {
         return _masked_softmax_backward(on(d, {6, 5}, kBFloat16), on(d, {6, 5}, kBFloat16), on(d, {6, 5}, kBool));
       }},
      {"_masked_softmax of an empty input",
       [](Device d) { return _masked_softmax(on(d, {0, 5}), on(d, {0, 5}, kBool)); }},
  };
  return cases;
}

}  // namespace remat::testing
