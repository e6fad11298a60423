// Mirrors c10/util/BFloat16.h and c10/util/Half.h: 16-bit float storage types.
#pragma once

#include <cstdint>
#include <cstring>

namespace remat {

// bfloat16: the top 16 bits of an IEEE float32. Arithmetic happens in float.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(round_to_nearest_even(f)) {}  // NOLINT: implicit like c10
  operator float() const {                               // NOLINT
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  static uint16_t round_to_nearest_even(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN stays a (quiet) NaN
    uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>((u + rounding_bias) >> 16);
  }
};

// IEEE half (binary16). Conversions are exact round-to-nearest-even, done in software on CPU.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(from_float(f)) {}  // NOLINT
  operator float() const { return to_float(bits); }  // NOLINT

  static float to_float(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
      if (mant == 0) {
        u = sign;
      } else {  // subnormal: normalise
        int e = -1;
        do { ++e; mant <<= 1; } while ((mant & 0x400u) == 0);
        u = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ffu) << 13;
      }
    } else if (exp == 31) {
      u = sign | 0x7f800000u | mant << 13;
    } else {
      u = sign | (exp + 127 - 15) << 23 | mant << 13;
    }
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  static uint16_t from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
    if (abs < 0x38800000u) {  // result is subnormal or zero: add via float arithmetic
      float a;
      std::memcpy(&a, &abs, sizeof a);
      a += 0.5f;  // aligns the 10 mantissa bits of the subnormal at the bottom, rounding RNE
      uint32_t r;
      std::memcpy(&r, &a, sizeof r);
      return static_cast<uint16_t>(sign | (r - 0x3f000000u));
    }
    uint32_t mant_odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (abs >> 13));
  }
};

}  // namespace remat
