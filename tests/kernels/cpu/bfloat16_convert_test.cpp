// Tests kernels/cpu/bfloat16_convert.h: the vectorized array conversions give exactly the bits of
// BFloat16's scalar ones (round to nearest even, ties, NaN, infinities, subnormals), at every
// length around the vector width.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/bfloat16_convert.h"

using remat::BFloat16;
using remat::kernels::cpu::bf16_to_float;
using remat::kernels::cpu::float_to_bf16;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

TEST_CASE("float_to_bf16 rounds exactly as BFloat16(float)", "[bfloat16_convert]") {
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -1.5f, 3.14159f, 1e-40f, -1e-39f, 3.0e38f, -3.4e38f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), from_bits(0xff800001u),  // a negative NaN
                          from_bits(0x3f808000u),  // a tie, rounds to even (down)
                          from_bits(0x3f818000u),  // a tie, rounds to even (up)
                          from_bits(0x7f7fffffu)};  // FLT_MAX rounds to infinity
  for (int i = 0; i < 200; ++i) x.push_back(std::sin(0.37f * float(i)) * std::pow(10.0f, float(i % 20 - 10)));
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{16}, size_t{17}, x.size()}) {
    INFO("n = " << n);
    std::vector<BFloat16> out(n);
    float_to_bf16(x.data(), out.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) {
      INFO("x = " << x[i]);
      CHECK(out[i].bits == BFloat16(x[i]).bits);
    }
  }
}

TEST_CASE("bf16_to_float is exact", "[bfloat16_convert]") {
  std::vector<BFloat16> h;
  for (uint32_t bits = 0; bits < 65536; bits += 7) {
    BFloat16 b;
    b.bits = static_cast<uint16_t>(bits);
    h.push_back(b);
  }
  for (size_t n : {size_t{3}, size_t{16}, size_t{33}, h.size()}) {
    std::vector<float> out(n);
    bf16_to_float(h.data(), out.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) {
      uint32_t u;
      std::memcpy(&u, &out[i], sizeof u);
      CHECK(u == static_cast<uint32_t>(h[i].bits) << 16);
    }
  }
}

TEST_CASE("float_to_bf16 matches BFloat16(float) over every sign, exponent and top mantissa", "[bfloat16_convert]") {
  // Each high half (sign, exponent, 7 mantissa bits) with low halves at the rounding's edges: below,
  // at and above the tie, and the extremes. Runs of 16 consecutive high halves fill a vector, so most
  // vectors are all normal (vcvtneps2bf16's path where the CPU has it) and those that reach a
  // subnormal or NaN high half take the integer path, every lane checked either way.
  for (uint32_t low : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x1234u}) {
    std::vector<float> x(65536);
    for (uint32_t high = 0; high < 65536; ++high) x[high] = from_bits(high << 16 | low);
    std::vector<BFloat16> out(x.size());
    float_to_bf16(x.data(), out.data(), static_cast<int64_t>(x.size()));
    int64_t mismatches = 0;
    for (size_t i = 0; i < x.size(); ++i)
      if (out[i].bits != BFloat16(x[i]).bits) {
        if (mismatches++ < 5) FAIL_CHECK("bits 0x" << std::hex << (i << 16 | low) << ": got 0x" << out[i].bits
                                                    << ", BFloat16 gives 0x" << BFloat16(x[i]).bits);
      }
    CHECK(mismatches == 0);
  }
}

#if defined(__AVX512F__)
TEST_CASE("store32_from_float checks both halves: a subnormal or NaN in either lane takes BFloat16's rounding",
          "[bfloat16_convert]") {
  // One check covers 32 lanes (float_to_bf16x32); where the CPU has AVX512_BF16, vcvtne2ps2bf16 would
  // flush a subnormal to 0 and keep a NaN's payload, so a special value in either half, at any lane,
  // must send the pair to the integer rounding.
  using remat::kernels::cpu::store32_from_float;
  const float specials[] = {1e-40f, -1e-39f, from_bits(0x00008000u), std::numeric_limits<float>::quiet_NaN(),
                            from_bits(0xff800001u), from_bits(0x7f800001u)};  // a negative and a signalling NaN
  for (float special : specials)
    for (int lane = 0; lane < 32; ++lane) {
      INFO("special bits 0x" << std::hex << BFloat16(special).bits << std::dec << " at lane " << lane);
      float x[32];
      for (int k = 0; k < 32; ++k) x[k] = 1.0f + 0.0078125f * float(k) + 1e-5f;  // normal, rounding up
      x[lane] = special;
      BFloat16 out[32];
      store32_from_float(out, _mm512_loadu_ps(x), _mm512_loadu_ps(x + 16));
      int64_t wrong = 0;
      for (int k = 0; k < 32; ++k) wrong += out[k].bits != BFloat16(x[k]).bits;
      CHECK(wrong == 0);
      float back[32];
      store32_from_float(back, _mm512_loadu_ps(x), _mm512_loadu_ps(x + 16));  // float: both halves as they are
      CHECK(std::memcmp(back, x, sizeof x) == 0);
    }
}
#endif
