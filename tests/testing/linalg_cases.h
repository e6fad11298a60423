// The matrix products whose operand copies the drift tests of ops/linalg_defs.h compare between a
// backend and a Meta dry run (tests/ops/linalg_defs_test.cpp, tests/ops/cuda/linalg_defs_test.cpp).
#pragma once

#include <vector>

#include "remat.h"
#include "tests/testing/structured_defs.h"

namespace remat::testing {

inline const std::vector<AllocationCase>& gemm_cases() {
  static const std::vector<AllocationCase> cases = {
      // an expanded operand (mm's backward after a sum): neither row- nor column-major
      {"mm, a expanded", [](Device d) { return mm(expand(on(d, {1, 8}), {6, 8}), on(d, {8, 5})); }},
      {"mm, b expanded", [](Device d) { return mm(on(d, {6, 8}), expand(on(d, {8, 1}), {8, 5})); }},
      {"mm, both expanded",
       [](Device d) { return mm(expand(on(d, {1, 8}), {6, 8}), expand(on(d, {8, 1}), {8, 5})); }},
      // attention's q @ k^T on [B, T, H, D] viewed as [B, H, T, D]: batch dims no one stride steps
      {"bmm, 4-D strided",
       [](Device d) {
         return bmm(transpose(on(d, {2, 8, 3, 8}), 1, 2), transpose(transpose(on(d, {2, 8, 3, 8}), 1, 2), 2, 3));
       }},
      {"bmm, b expanded, a's batch dims unsteppable",
       [](Device d) { return bmm(transpose(on(d, {2, 8, 3, 8}), 1, 2), expand(on(d, {1, 1, 8, 1}), {2, 3, 8, 8})); }},
      {"addmm, broadcast bias, a expanded",
       [](Device d) { return addmm(on(d, {6, 1}), expand(on(d, {1, 8}), {6, 8}), on(d, {8, 5})); }},
      {"addmm, row bias, b expanded",
       [](Device d) { return addmm(on(d, {5}), on(d, {6, 8}), expand(on(d, {8, 1}), {8, 5})); }},
      {"mm, empty sum", [](Device d) { return mm(expand(on(d, {1, 0}), {6, 0}), on(d, {0, 5})); }},
  };
  return cases;
}

}  // namespace remat::testing
