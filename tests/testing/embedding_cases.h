// The embedding calls whose allocations the drift tests of ops/embedding_defs.h compare between a
// backend and a Meta dry run (tests/ops/embedding_defs_test.cpp,
// tests/ops/cuda/embedding_defs_test.cpp).
#pragma once

#include <vector>

#include "remat.h"
#include "tests/testing/structured_defs.h"

namespace remat::testing {

inline const std::vector<AllocationCase>& embedding_cases() {
  static const std::vector<AllocationCase> cases = {
      {"embedding", [](Device d) { return embedding(on(d, {10, 4}), on(d, {2, 3}, kLong)); }},
      // strided operands are read through contiguous copies (which a dry run counting like the
      // CPU once left out)
      {"embedding of a transposed weight",
       [](Device d) { return embedding(transpose(on(d, {4, 10}), 0, 1), on(d, {2, 3}, kLong)); }},
      {"embedding of transposed indices",
       [](Device d) { return embedding(on(d, {10, 4}), transpose(on(d, {3, 2}, kLong), 0, 1)); }},
      {"embedding of no index", [](Device d) { return embedding(on(d, {10, 4}), on(d, {0}, kLong)); }},
      // an empty output: the indices are still checked
      {"embedding of a zero-width weight", [](Device d) { return embedding(on(d, {10, 0}), on(d, {3}, kLong)); }},
      {"embedding backward",
       [](Device d) { return embedding_dense_backward(on(d, {2, 3, 4}), on(d, {2, 3}, kLong), 10); }},
      // repeated rows accumulate in a Float table (which a dry run counting like the CPU once left out)
      {"embedding backward, BFloat16",
       [](Device d) { return embedding_dense_backward(on(d, {2, 3, 4}, kBFloat16), on(d, {2, 3}, kLong), 10); }},
      {"embedding backward of a transposed gradient",
       [](Device d) { return embedding_dense_backward(transpose(on(d, {4, 6}), 0, 1), on(d, {6}, kLong), 10); }},
      {"embedding backward of transposed indices",
       [](Device d) {
         return embedding_dense_backward(on(d, {2, 3, 4}), transpose(on(d, {3, 2}, kLong), 0, 1), 10);
       }},
      {"embedding backward of no index", [](Device d) { return embedding_dense_backward(on(d, {0, 4}), on(d, {0}, kLong), 10); }},
  };
  return cases;
}

}  // namespace remat::testing
