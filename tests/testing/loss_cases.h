// The loss calls whose allocations the drift tests of ops/loss_defs.h compare between a backend
// and a Meta dry run (tests/ops/loss_defs_test.cpp, tests/ops/cuda/loss_defs_test.cpp).
#pragma once

#include <vector>

#include "remat.h"
#include "tests/testing/structured_defs.h"

namespace remat::testing {

inline const std::vector<AllocationCase>& loss_cases() {
  static const std::vector<AllocationCase> cases = {
      {"cross_entropy", [](Device d) { return cross_entropy(on(d, {4, 6}), on(d, {4}, kLong)); }},
      // strided operands are read through contiguous copies (which a dry run counting like the
      // CPU once left out)
      {"cross_entropy of transposed logits",
       [](Device d) { return cross_entropy(transpose(on(d, {6, 4}), 0, 1), on(d, {4}, kLong)); }},
      {"cross_entropy of strided targets",
       [](Device d) { return cross_entropy(on(d, {4, 6}), select(on(d, {4, 2}, kLong), 1, 0)); }},
      {"cross_entropy, BFloat16", [](Device d) { return cross_entropy(on(d, {4, 6}, kBFloat16), on(d, {4}, kLong)); }},
      {"cross_entropy backward",
       [](Device d) { return cross_entropy_backward(on(d, {}), on(d, {4, 6}), on(d, {4}, kLong)); }},
      {"cross_entropy backward of transposed logits",
       [](Device d) { return cross_entropy_backward(on(d, {}), transpose(on(d, {6, 4}), 0, 1), on(d, {4}, kLong)); }},
      // CUDA reads the upstream gradient in Float
      {"cross_entropy backward, BFloat16",
       [](Device d) { return cross_entropy_backward(on(d, {}, kBFloat16), on(d, {4, 6}, kBFloat16), on(d, {4}, kLong)); }},
      {"cross_entropy backward of an empty batch",
       [](Device d) { return cross_entropy_backward(on(d, {}), on(d, {0, 6}), on(d, {0}, kLong)); }},
  };
  return cases;
}

}  // namespace remat::testing
