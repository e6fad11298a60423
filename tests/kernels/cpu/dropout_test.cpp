// Tests kernels/cpu/dropout.h (ATen/native/Dropout.cpp): the one-pass forward (dropout_forward,
// AVX-512 where compiled in) gives the mask and the values of the two-pass rule
// (dropout_mask_kernel, then masked_scale) bit for bit, for every length, offset and p; masked_scale
// for float and bfloat16 (16 lanes, the output streamed when large) gives the bits of the scalar
// formula.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/dropout.h"

namespace cpu = remat::kernels::cpu;
using remat::BFloat16;

namespace {

template <class T>
uint32_t bits_of(T v) {
  if constexpr (sizeof(T) == 4) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return u;
  } else {
    uint16_t u;
    std::memcpy(&u, &v, 2);
    return u;
  }
}

}  // namespace

TEMPLATE_TEST_CASE("dropout_forward equals dropout_mask_kernel then masked_scale, bit for bit", "[dropout]", float,
                   BFloat16, double) {
  const uint64_t seed = 0x0123'4567'89ab'cdefull;
  for (int64_t n : {0, 1, 5, 63, 64, 65, 200, 4099, 70001}) {
    std::vector<TestType> x(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) x[k] = TestType(std::sin(0.7f * float(k)) * 5.0f);
    if (n > 10) {  // -0, infinities and NaN, kept or dropped as the mask says
      x[3] = TestType(-0.0f);
      x[4] = TestType(std::numeric_limits<float>::infinity());
      x[5] = TestType(-std::numeric_limits<float>::infinity());
      x[6] = TestType(std::numeric_limits<float>::quiet_NaN());
    }
    for (uint64_t offset : {uint64_t{0}, uint64_t{12}, uint64_t{1} << 33}) {
      for (double p : {0.0, 0.1, 0.5, 1.0}) {
        INFO("n = " << n << ", offset = " << offset << ", p = " << p);
        const double scale = p == 1.0 ? 0.0 : 1.0 / (1.0 - p);
        std::vector<char> mask(static_cast<size_t>(n) + 1, 2), want_mask(static_cast<size_t>(n) + 1, 2);
        std::vector<TestType> out(static_cast<size_t>(n)), want(static_cast<size_t>(n));
        cpu::dropout_forward(out.data(), reinterpret_cast<bool*>(mask.data()), x.data(), n, seed, offset, p, scale);
        cpu::dropout_mask_kernel(reinterpret_cast<bool*>(want_mask.data()), n, seed, offset, p);
        cpu::masked_scale(want.data(), x.data(), reinterpret_cast<const bool*>(want_mask.data()), n, scale);
        int64_t wrong_mask = 0, wrong_value = 0;
        for (int64_t i = 0; i < n; ++i) {
          wrong_mask += mask[i] != want_mask[i];
          wrong_value += bits_of(out[i]) != bits_of(want[i]);
        }
        CHECK(wrong_mask == 0);
        CHECK(wrong_value == 0);
        CHECK(mask[n] == 2);  // nothing past the end
      }
    }
  }
}

TEMPLATE_TEST_CASE("masked_scale's output gives the bits of x * (mask * scale), streamed or not", "[dropout]", float,
                   BFloat16) {
  // 2 sizeof(T) + 1 bytes an element: from kStreamStoreBytes moved the output streams (where the CPU
  // has AVX-512); out starting 0 and 3 elements past a line: an ordinary head, whole lines, a tail.
  // bfloat16: widened, scaled as float, rounded once (the float expression converted).
  const int64_t bytes_per_element = 2 * static_cast<int64_t>(sizeof(TestType)) + 1;
  const TestType fill = TestType(-7.0f);
  for (int64_t n : {int64_t(37), int64_t(70001), cpu::kStreamStoreBytes / bytes_per_element + 13}) {
    std::vector<TestType> x(static_cast<size_t>(n)), buffer(static_cast<size_t>(n) + 64, fill);
    std::vector<uint8_t> mask(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      x[static_cast<size_t>(i)] = TestType(static_cast<float>(i % 1013) * 0.731f - 300.0f);
      mask[static_cast<size_t>(i)] = (i * 2654435761u) % 10 != 0;
    }
    if (n > 10) {  // -0, infinities and NaN, kept or dropped as the mask says
      x[3] = TestType(-0.0f);
      x[4] = TestType(std::numeric_limits<float>::infinity());
      x[5] = TestType(-std::numeric_limits<float>::infinity());
      x[6] = TestType(std::numeric_limits<float>::quiet_NaN());
    }
    const double scale = 1.0 / 0.9;
    TestType* line =
        buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64 / sizeof(TestType);
    for (int64_t shift : {int64_t(0), int64_t(3)}) {
      INFO("n " << n << ", shift " << shift);
      std::fill(buffer.begin(), buffer.end(), fill);
      TestType* out = line + shift;
      cpu::masked_scale(out, x.data(), reinterpret_cast<const bool*>(mask.data()), n, scale);
      int64_t wrong = 0, touched = 0;
      const float s = static_cast<float>(scale);
      for (int64_t i = 0; i < n; ++i) {
        const float want = static_cast<float>(x[static_cast<size_t>(i)]) *
                           (static_cast<float>(mask[static_cast<size_t>(i)]) * s);
        wrong += bits_of(out[i]) != bits_of(TestType(want));
      }
      for (TestType* p = buffer.data(); p < buffer.data() + buffer.size(); ++p)
        if (p < out || p >= out + n) touched += bits_of(*p) != bits_of(fill);
      CHECK(wrong == 0);
      CHECK(touched == 0);
    }
  }
}
