// Mirrors c10/test/util/Half_test.cpp and c10/test/util/bfloat16_test.cpp.
// Tests engine/core/bfloat16.h (BFloat16 and Half conversions: exact round-to-nearest-even).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <limits>
#include <vector>

#include "engine/core/bfloat16.h"

using remat::BFloat16;
using remat::Half;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Reference rounding of a float to bfloat16, independent of the implementation: the two
// bfloat16 neighbours of |f| are compared in double; a tie goes to the even mantissa.
uint16_t bf16_reference(float f) {
  uint32_t u = to_bits(f);
  uint32_t sign = u & 0x80000000u, mag = u & 0x7fffffffu;
  uint32_t lo = mag & 0xffff0000u, hi = lo + 0x10000u;  // hi may be +inf's pattern
  double a = static_cast<double>(from_bits(mag));
  double l = static_cast<double>(from_bits(lo));
  double h = hi == 0x7f800000u ? std::ldexp(1.0, 128) : static_cast<double>(from_bits(hi));
  uint32_t pick;
  if (a - l < h - a) pick = lo;
  else if (a - l > h - a) pick = hi;
  else pick = ((lo >> 16) & 1u) == 0 ? lo : hi;
  return static_cast<uint16_t>((sign | pick) >> 16);
}

// Every finite non-negative half value, in order (bit patterns 0x0000..0x7bff are increasing).
const std::vector<double>& half_values() {
  static const std::vector<double> v = [] {
    std::vector<double> out;
    for (uint32_t h = 0; h <= 0x7bffu; ++h) {
      uint32_t e = h >> 10, m = h & 0x3ffu;
      out.push_back(e == 0 ? std::ldexp(static_cast<double>(m), -24)
                           : std::ldexp(static_cast<double>(m + 1024), static_cast<int>(e) - 25));
    }
    return out;
  }();
  return v;
}

// Reference rounding of a float to half: nearest of the table (65536 past the largest finite
// value, i.e. overflow to inf), ties to the even pattern.
uint16_t half_reference(float f) {
  if (std::isnan(f)) return 0x7e00;
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  double a = std::fabs(static_cast<double>(f));
  const std::vector<double>& v = half_values();
  if (a >= 65520.0) return sign | 0x7c00;  // halfway between 65504 and 65536 and beyond: inf
  size_t hi = static_cast<size_t>(std::lower_bound(v.begin(), v.end(), a) - v.begin());
  if (hi < v.size() && v[hi] == a) return static_cast<uint16_t>(sign | hi);
  size_t lo = hi - 1;
  double up = hi < v.size() ? v[hi] : 65536.0;
  uint16_t pick;
  if (a - v[lo] < up - a) pick = static_cast<uint16_t>(lo);
  else if (a - v[lo] > up - a) pick = static_cast<uint16_t>(hi);
  else pick = static_cast<uint16_t>((lo & 1u) == 0 ? lo : hi);
  return static_cast<uint16_t>(sign | pick);
}

// Floats to test conversions on: a stride through every bit pattern, plus, for every pair of
// neighbouring 16-bit values, the exact midpoint and the floats just around it (where the
// rounding direction changes).
template <class Midpoints>
std::vector<float> probe_floats(const Midpoints& midpoints) {
  std::vector<float> out;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4093) out.push_back(from_bits(static_cast<uint32_t>(u)));
  for (float m : midpoints) {
    for (float x : {m, std::nextafter(m, 0.0f), std::nextafter(m, std::numeric_limits<float>::infinity())}) {
      out.push_back(x);
      out.push_back(-x);
    }
  }
  for (float x : {0.0f, -0.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min()})
    out.push_back(x);
  return out;
}

// Counts failed checks in a large loop and keeps the first (one REQUIRE per loop: fast).
struct Mismatches {
  size_t count = 0;
  uint32_t first = 0;
  void check(bool ok, uint32_t bits) {
    if (!ok && count++ == 0) first = bits;
  }
  std::string describe(const char* what) const {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%zu mismatches; the first at %s 0x%x", count, what, first);
    return buf;
  }
};

}  // namespace

TEST_CASE("BFloat16 to float is exact: the top 16 bits of a float32", "[bfloat16]") {
  Mismatches bad;
  for (uint32_t b = 0; b <= 0xffffu; ++b) {
    BFloat16 x;
    x.bits = static_cast<uint16_t>(b);
    float f = static_cast<float>(x);
    bad.check(to_bits(f) == b << 16, b);
    // Every bfloat16 value survives a round trip through float (NaNs stay NaN).
    bad.check(std::isnan(f) ? std::isnan(static_cast<float>(BFloat16(f))) : BFloat16(f).bits == b, b);
  }
  INFO(bad.describe("bfloat16 bits"));
  REQUIRE(bad.count == 0);
}

TEST_CASE("BFloat16 rounds to nearest, ties to even", "[bfloat16]") {
  // 1 + 2^-8 lies halfway between 1 (0x3f80, even) and 1 + 2^-7 (0x3f81): to 0x3f80.
  REQUIRE(BFloat16(1.0f + 0x1p-8f).bits == 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 0x3f81 (odd) and 0x3f82 (even): to 0x3f82.
  REQUIRE(BFloat16(1.0f + 3 * 0x1p-8f).bits == 0x3f82);
  REQUIRE(BFloat16(1.0f + 0x1p-8f + 0x1p-20f).bits == 0x3f81);  // just above the tie: up
  REQUIRE(BFloat16(-(1.0f + 3 * 0x1p-8f)).bits == 0xbf82);
  REQUIRE(BFloat16(std::numeric_limits<float>::infinity()).bits == 0x7f80);
  REQUIRE(BFloat16(-std::numeric_limits<float>::infinity()).bits == 0xff80);
  REQUIRE(BFloat16(std::numeric_limits<float>::max()).bits == 0x7f80);  // rounds up past the largest
  REQUIRE(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
  REQUIRE(BFloat16(std::nanf("")).bits == 0x7fc0);

  std::vector<float> midpoints;
  for (uint32_t b = 0; b < 0x7f80u; ++b) midpoints.push_back(from_bits((b << 16) | 0x8000u));
  Mismatches bad;
  for (float f : probe_floats(midpoints)) {
    if (std::isnan(f)) continue;
    bad.check(BFloat16(f).bits == bf16_reference(f), to_bits(f));
  }
  INFO(bad.describe("float bits"));
  REQUIRE(bad.count == 0);
}

TEST_CASE("Half to float is exact for all 65536 bit patterns", "[bfloat16]") {
  const std::vector<double>& table = half_values();
  Mismatches bad;
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    float f = Half::to_float(static_cast<uint16_t>(h));
    uint32_t mag = h & 0x7fffu;
    if (mag > 0x7c00u) {
      bad.check(std::isnan(f), h);
    } else if (mag == 0x7c00u) {
      bad.check(std::isinf(f), h);
    } else {
      bad.check(static_cast<double>(std::fabs(f)) == table[mag], h);
    }
    bad.check(std::signbit(f) == ((h & 0x8000u) != 0), h);
  }
  INFO(bad.describe("half bits"));
  REQUIRE(bad.count == 0);
}

TEST_CASE("Half rounds to nearest, ties to even (against a table of every half value)", "[bfloat16]") {
  REQUIRE(Half(1.0f).bits == 0x3c00);
  REQUIRE(Half(65504.0f).bits == 0x7bff);
  REQUIRE(Half(65519.99f).bits == 0x7bff);
  REQUIRE(Half(65520.0f).bits == 0x7c00);  // the tie past the largest half goes to inf
  REQUIRE(Half(0x1p-24f).bits == 0x0001);   // smallest subnormal
  REQUIRE(Half(0x1p-25f).bits == 0x0000);   // its half: a tie, to even (zero)
  REQUIRE(Half(0x1.8p-24f).bits == 0x0002); // 1.5 ulp: a tie, to even (2)
  REQUIRE(Half(-0.0f).bits == 0x8000);
  REQUIRE(Half(std::nanf("")).bits == 0x7e00);

  const std::vector<double>& table = half_values();
  std::vector<float> midpoints;
  for (size_t i = 0; i + 1 < table.size(); ++i) midpoints.push_back(static_cast<float>((table[i] + table[i + 1]) / 2));
  midpoints.push_back(65520.0f);
  Mismatches bad;
  for (float f : probe_floats(midpoints)) {
    uint16_t got = Half(f).bits;
    bad.check(std::isnan(f) ? std::isnan(Half::to_float(got)) : got == half_reference(f), to_bits(f));
  }
  INFO(bad.describe("float bits"));
  REQUIRE(bad.count == 0);
}

#if defined(__FLT16_MAX__)
TEST_CASE("Half matches the compiler's _Float16 for every half and many floats", "[bfloat16]") {
  Mismatches bad_to_float;
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    uint16_t bits = static_cast<uint16_t>(h);
    _Float16 ref;
    std::memcpy(&ref, &bits, sizeof ref);
    float expected = static_cast<float>(ref), got = Half::to_float(bits);
    bad_to_float.check(std::isnan(expected) ? std::isnan(got) : to_bits(got) == to_bits(expected), h);
  }
  INFO(bad_to_float.describe("half bits"));
  REQUIRE(bad_to_float.count == 0);
  const std::vector<double>& table = half_values();
  std::vector<float> midpoints;
  for (size_t i = 0; i + 1 < table.size(); ++i) midpoints.push_back(static_cast<float>((table[i] + table[i + 1]) / 2));
  Mismatches bad_from_float;
  for (float f : probe_floats(midpoints)) {
    _Float16 ref = static_cast<_Float16>(f);
    uint16_t expected;
    std::memcpy(&expected, &ref, sizeof expected);
    uint16_t got = Half(f).bits;
    bad_from_float.check(std::isnan(f) ? std::isnan(Half::to_float(got)) : got == expected, to_bits(f));
  }
  INFO(bad_from_float.describe("float bits"));
  REQUIRE(bad_from_float.count == 0);
}
#endif
