// The reductions whose temporaries the drift tests of ops/reduction_defs.h compare between a
// backend and a Meta dry run (tests/ops/reduction_defs_test.cpp,
// tests/ops/cuda/reduction_defs_test.cpp).
#pragma once

#include <vector>

#include "remat.h"
#include "tests/testing/structured_defs.h"

namespace remat::testing {

inline const std::vector<AllocationCase>& reduction_cases() {
  static const std::vector<AllocationCase> cases = {
      {"sum of all", [](Device d) { return sum(on(d, {6, 5})); }},
      // a Bool sum is a Long one: the input is converted first
      {"sum of a Bool tensor", [](Device d) { return sum(on(d, {6, 5}, kBool), Shape{1}, false); }},
      {"mean of a transposed tensor", [](Device d) { return mean(transpose(on(d, {6, 5}), 0, 1), Shape{0}, true); }},
      // reduced dims that are not one run: moved last through a copy on CUDA
      {"sum over dims 0 and 2", [](Device d) { return sum(on(d, {3, 5, 7}), Shape{0, 2}, false); }},
      {"sum of a Long tensor over dims 0 and 2",
       [](Device d) { return sum(on(d, {3, 5, 7}, kLong), Shape{0, 2}, false); }},
      // few long rows: CUDA splits them, through a workspace
      {"sum of long rows", [](Device d) { return sum(on(d, {4, 100000}), Shape{1}, false); }},
      {"amax of an expanded tensor", [](Device d) { return amax(expand(on(d, {1, 5}), {6, 5}), 0, false); }},
      {"sum of an empty tensor", [](Device d) { return sum(on(d, {0, 5}, kBool), Shape{0}, false); }},
      {"mean into an empty result", [](Device d) { return mean(on(d, {0, 5}), Shape{1}, false); }},
  };
  return cases;
}

}  // namespace remat::testing
