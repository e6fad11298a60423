// The dropout calls whose allocations the drift tests of ops/dropout_defs.h compare between a
// backend and a Meta dry run (tests/ops/dropout_defs_test.cpp, tests/ops/cuda/dropout_defs_test.cpp).
#pragma once

#include <tuple>
#include <vector>

#include "remat.h"
#include "tests/testing/structured_defs.h"

namespace remat::testing {

inline const std::vector<AllocationCase>& dropout_cases() {
  static const std::vector<AllocationCase> cases = {
      // the output, then the mask (a dry run once made them in the other order than the backends)
      {"native_dropout", [](Device d) { return std::get<0>(native_dropout(on(d, {4, 6}), 0.5)); }},
      // a strided input is read through a contiguous copy (which a dry run once left out)
      {"native_dropout of a transposed input",
       [](Device d) { return std::get<0>(native_dropout(transpose(on(d, {6, 4}), 0, 1), 0.5)); }},
      {"native_dropout, BFloat16", [](Device d) { return std::get<0>(native_dropout(on(d, {4, 6}, kBFloat16), 0.1)); }},
      {"native_dropout of an empty input", [](Device d) { return std::get<0>(native_dropout(on(d, {0, 6}), 0.5)); }},
      {"dropout", [](Device d) { return dropout(on(d, {4, 6}), 0.5, true); }},
      {"native_dropout backward",
       [](Device d) { return native_dropout_backward(on(d, {4, 6}), on(d, {4, 6}, kBool), 2.0); }},
      // the CPU reads strided operands through contiguous copies (which a dry run once left out)
      {"native_dropout backward of transposed operands",
       [](Device d) {
         return native_dropout_backward(transpose(on(d, {6, 4}), 0, 1), transpose(on(d, {6, 4}, kBool), 0, 1), 2.0);
       }},
  };
  return cases;
}

}  // namespace remat::testing
