// Tests kernels/cpu/bfloat16_blocks.h (vec::map over BFloat16): every element is the float
// function of the widened inputs, rounded once, across block boundaries and thread chunks; an
// input may be the output; a broadcast input (stride 0) is read as one value.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "kernels/cpu/bfloat16_blocks.h"

namespace kc = remat::kernels::cpu;
using remat::BFloat16;

namespace {

std::vector<BFloat16> ramp(int64_t n, float scale) {
  std::vector<BFloat16> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = BFloat16(scale * std::sin(0.01f * float(i)));
  return v;
}

// out = a * b + 1 in float (one rounding in float, one to bf16), block by block.
void fma_block(float* o, const float* const* in, int64_t len) {
  for (int64_t k = 0; k < len; ++k) o[k] = in[0][k] * in[1][k] + 1.0f;
}

}  // namespace

TEST_CASE("map_bf16_blocks: float function of the widened inputs, rounded once", "[bfloat16_blocks]") {
  for (int64_t n : {0, 1, 1023, 1024, 1025, 70001}) {
    INFO("n = " << n);
    std::vector<BFloat16> a = ramp(n, 3.0f), b = ramp(n, -2.0f), out(static_cast<size_t>(n));
    kc::map_bf16_blocks<2>(out.data(), {a.data(), b.data()}, n, fma_block);
    for (int64_t i = 0; i < n; ++i) {
      const size_t j = static_cast<size_t>(i);
      CHECK(out[j].bits == BFloat16(float(a[j]) * float(b[j]) + 1.0f).bits);
    }
    // In place: the output is also the first input.
    std::vector<BFloat16> in_place = a;
    kc::map_bf16_blocks<2>(in_place.data(), {in_place.data(), b.data()}, n, fma_block);
    CHECK(in_place == out);
  }
}

TEST_CASE("map_bf16_run: a stride-0 input is one broadcast value", "[bfloat16_blocks]") {
  const int64_t n = 2500;
  std::vector<BFloat16> a = ramp(n, 1.5f), out(n);
  const BFloat16 s(0.75f);
  kc::map_bf16_run<2>(out.data(), {a.data(), &s}, {1, 0}, n, fma_block);
  for (int64_t i = 0; i < n; ++i) CHECK(out[i].bits == BFloat16(float(a[i]) * 0.75f + 1.0f).bits);
}

TEST_CASE("bf16_rows: each row widened, passed with its index, and rounded once", "[bfloat16_blocks]") {
  const int64_t rows = 6, len = 37;
  std::vector<BFloat16> a = ramp(rows * len, 2.0f), b = ramp(rows * len, 0.5f), out(rows * len);
  // Rows 1..4 only: the others stay untouched.
  kc::bf16_rows<2>(out.data(), {a.data(), b.data()}, 1, 5, len,
                   [&](int64_t r, float* y, const std::array<const float*, 2>& x) {
                     for (int64_t k = 0; k < len; ++k) y[k] = x[0][k] - x[1][k] * float(r);
                   });
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < len; ++k) {
      const size_t i = static_cast<size_t>(r * len + k);
      const uint16_t want = (r >= 1 && r < 5) ? BFloat16(float(a[i]) - float(b[i]) * float(r)).bits : uint16_t{0};
      CHECK(out[i].bits == want);
    }
}
