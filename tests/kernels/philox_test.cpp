// Mirrors Random123's tests/kat_vectors and aten/src/ATen/test/cpu_rng_test.cpp.
// Tests kernels/philox.h (Philox4x32-10 against Random123's known-answer vectors, and the
// counter layout of the offset rule in engine/core/generator.h).
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>

#include "kernels/philox.h"

using remat::kernels::philox4x32_10;
using remat::kernels::philox_word;
using remat::kernels::uint32_to_uniform;

namespace {
// Random123's interface: counter words c0..c3 and key words k0, k1. remat's takes the counter
// as (block = c1:c0, offset = c3:c2) and the key as seed = k1:k0.
std::array<uint32_t, 4> random123(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  uint64_t block = uint64_t{c[1]} << 32 | c[0];
  uint64_t offset = uint64_t{c[3]} << 32 | c[2];
  uint64_t seed = uint64_t{k[1]} << 32 | k[0];
  auto r = philox4x32_10(block, offset, seed);
  return {r.x[0], r.x[1], r.x[2], r.x[3]};
}
}  // namespace

TEST_CASE("philox4x32_10 matches Random123's known-answer vectors", "[philox]") {
  // Random123 tests/kat_vectors, "philox4x32 10" lines: counter, key -> result.
  REQUIRE(random123({0, 0, 0, 0}, {0, 0}) ==
          std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  REQUIRE(random123({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
          std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  REQUIRE(random123({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
          std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("philox_word: element i is word i % 4 of block i / 4", "[philox]") {
  const uint64_t seed = 0x0123456789abcdefull, offset = 0x1122334455667788ull;
  for (uint64_t i = 0; i < 64; ++i) {
    REQUIRE(philox_word(seed, offset, i) == philox4x32_10(i / 4, offset, seed).x[i % 4]);
  }
  // Neighbouring offsets and seeds give unrelated blocks.
  REQUIRE(philox4x32_10(0, 1, 0).x[0] != philox4x32_10(0, 0, 0).x[0]);
  REQUIRE(philox4x32_10(0, 0, 1).x[0] != philox4x32_10(0, 0, 0).x[0]);
}

TEST_CASE("uint32_to_uniform maps the top 24 bits to [0, 1)", "[philox]") {
  REQUIRE(uint32_to_uniform(0) == 0.0f);
  REQUIRE(uint32_to_uniform(0xff) == 0.0f);  // the low 8 bits are dropped
  REQUIRE(uint32_to_uniform(0x80000000u) == 0.5f);
  REQUIRE(uint32_to_uniform(0xffffffffu) == 1.0f - 0x1p-24f);  // never 1
  REQUIRE(uint32_to_uniform(0x100) == 0x1p-24f);
}
