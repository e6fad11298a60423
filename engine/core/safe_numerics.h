// Mirrors c10/util/safe_numerics.h (c10::mul_overflows, c10::safe_multiplies_u64): products and
// sums of sizes that reach an allocation, a dry run or a printed figure, checked for int64
// overflow (__builtin_mul_overflow) instead of wrapping. Header-only, free of the rest of remat
// but for error.h.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "engine/core/error.h"

namespace remat {

// True when a * b (or a + b) does not fit in int64; *out is then unspecified.
inline bool mul_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_mul_overflow(a, b, out); }
inline bool add_overflows(int64_t a, int64_t b, int64_t* out) { return __builtin_add_overflow(a, b, out); }

// The product of `factors`; throws remat::Error naming `what` and the factors when it overflows
// int64: "the model's parameter bytes: 4 * 4000000000 * 4000000000 overflows int64".
inline int64_t checked_product(const std::string& what, std::initializer_list<int64_t> factors) {
  int64_t p = 1;
  bool overflow = false;
  for (int64_t f : factors) overflow = overflow || mul_overflows(p, f, &p);
  if (overflow) {
    std::string text;
    for (int64_t f : factors) text += (text.empty() ? "" : " * ") + std::to_string(f);
    throw Error(what + ": " + text + " overflows int64");
  }
  return p;
}

// The sum of `terms`, likewise ("...: 9223372036854775807 + 1 overflows int64").
inline int64_t checked_sum(const std::string& what, std::initializer_list<int64_t> terms) {
  int64_t s = 0;
  bool overflow = false;
  for (int64_t t : terms) overflow = overflow || add_overflows(s, t, &s);
  if (overflow) {
    std::string text;
    for (int64_t t : terms) text += (text.empty() ? "" : " + ") + std::to_string(t);
    throw Error(what + ": " + text + " overflows int64");
  }
  return s;
}

}  // namespace remat
