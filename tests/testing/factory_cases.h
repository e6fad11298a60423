// The random fills whose allocations the drift tests of ops/factory_defs.h compare between a
// backend and a Meta dry run (tests/ops/factory_defs_test.cpp, tests/ops/cuda/factory_defs_test.cpp).
#pragma once

#include <vector>

#include "remat.h"
#include "tests/testing/structured_defs.h"

namespace remat::testing {

inline const std::vector<AllocationCase>& factory_cases() {
  static const std::vector<AllocationCase> cases = {
      {"uniform_", [](Device d) { Tensor t = on(d, {6, 4}); return uniform_(t, 0.0, 1.0, nullptr); }},
      // drawn into a contiguous buffer, then copied in: the buffer the Meta kernel once left out
      {"uniform_ of a transposed tensor",
       [](Device d) { Tensor t = transpose(on(d, {6, 4}), 0, 1); return uniform_(t, 0.0, 1.0, nullptr); }},
      {"normal_ of a BFloat16 slice",
       [](Device d) { Tensor t = slice(on(d, {6, 4}, kBFloat16), 1, 0, 4, 2); return normal_(t, 0.0, 1.0, nullptr); }},
      {"normal_ of an empty tensor", [](Device d) { Tensor t = on(d, {0, 4}); return normal_(t, 0.0, 1.0, nullptr); }},
  };
  return cases;
}

}  // namespace remat::testing
