// The copy calls whose allocations the drift tests of ops/copy_defs.h compare between a backend
// and a Meta dry run (tests/ops/copy_defs_test.cpp, tests/ops/cuda/copy_defs_test.cpp).
#pragma once

#include <vector>

#include "remat.h"
#include "tests/testing/structured_defs.h"

namespace remat::testing {

inline const std::vector<AllocationCase>& copy_cases() {
  static const std::vector<AllocationCase> cases = {
      {"clone of a transposed tensor", [](Device d) { return clone(transpose(on(d, {6, 4}), 0, 1)); }},
      {"contiguous of a transposed tensor", [](Device d) { return contiguous(transpose(on(d, {6, 4}), 0, 1)); }},
      {"contiguous of a contiguous tensor", [](Device d) { return contiguous(on(d, {6, 4})); }},
      // the conversion reads the strided input as it is: no copy first
      {"_to_copy of a transposed tensor to BFloat16",
       [](Device d) { return _to_copy(transpose(on(d, {6, 4}), 0, 1), kBFloat16, std::nullopt); }},
      {"_to_copy to its own device", [](Device d) { return _to_copy(on(d, {6, 4}), std::nullopt, d); }},
      {"cat of a strided and a Double tensor",
       [](Device d) { return cat({transpose(on(d, {4, 3}), 0, 1), on(d, {3, 2}, kDouble)}, 1); }},
      {"cat into an empty result", [](Device d) { return cat({on(d, {0, 3}), on(d, {0, 3})}, 0); }},
      {"triu of a batch", [](Device d) { return triu(on(d, {2, 4, 5}), 1); }},
      {"zeros_like", [](Device d) { return zeros_like(on(d, {3, 5}, kLong)); }},
      {"ones_like of an expanded tensor", [](Device d) { return ones_like(expand(on(d, {1, 5}), {3, 5})); }},
      {"slice_backward", [](Device d) { return slice_backward(on(d, {2, 2}), {2, 4}, 1, 0, 4, 2); }},
      {"copy_ of a broadcast Double source into a transposed destination",
       [](Device d) {
         Tensor dst = transpose(on(d, {4, 3}), 0, 1);
         dst.copy_(on(d, {4}, kDouble));
         return dst;
       }},
      {"fill_ and zero_",
       [](Device d) {
         Tensor t = on(d, {3, 4});
         t.fill_(2.0);
         t.zero_();
         return t;
       }},
  };
  return cases;
}

}  // namespace remat::testing
