// Tests kernels/cpu/random.h (ATen/native/cpu/DistributionKernels.cpp): the kernels give element
// i the bits of the rule in engine/core/generator.h (philox_word(seed, offset, i)) whatever the
// split into runs, blocks of four and (with AVX-512) groups of 16 blocks.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "kernels/cpu/random.h"

namespace cpu = remat::kernels::cpu;
using remat::kernels::philox_word;
using remat::kernels::uint32_to_uniform;

TEST_CASE("dropout_mask_kernel keeps element i iff the rule's uniform U_i < 1 - p, for every length and offset",
          "[random]") {
  for (int64_t n : {0, 1, 3, 5, 63, 64, 65, 130, 1000, 70001}) {
    for (uint64_t offset : {uint64_t{0}, uint64_t{12}, uint64_t{1} << 33}) {
      for (double p : {0.0, 0.1, 0.5, 1.0}) {
        INFO("n = " << n << ", offset = " << offset << ", p = " << p);
        const uint64_t seed = 0x1234'5678'9abc'def0ull;
        std::vector<char> mask(static_cast<size_t>(n) + 1, 2);
        cpu::dropout_mask_kernel(reinterpret_cast<bool*>(mask.data()), n, seed, offset, p);
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; ++i) {
          const bool keep = uint32_to_uniform(philox_word(seed, offset, static_cast<uint64_t>(i))) < float(1.0 - p);
          wrong += mask[i] != static_cast<char>(keep);
        }
        CHECK(wrong == 0);
        CHECK(mask[n] == 2);  // nothing past the end
      }
    }
  }
}

TEST_CASE("for_each_philox_word visits [b, e) once each with the rule's word, from any start", "[random]") {
  const uint64_t seed = 7, offset = 40;
  for (int64_t b : {0, 1, 2, 3, 4, 9}) {
    std::vector<int64_t> seen;
    bool words_match = true;
    cpu::for_each_philox_word(seed, offset, b, b + 11, [&](int64_t i, uint32_t word) {
      seen.push_back(i);
      words_match = words_match && word == philox_word(seed, offset, static_cast<uint64_t>(i));
    });
    REQUIRE(seen.size() == 11);
    for (size_t k = 0; k < seen.size(); ++k) CHECK(seen[k] == b + static_cast<int64_t>(k));
    CHECK(words_match);
  }
}

TEST_CASE("uniform_kernel gives element i from + (to - from) * U_i", "[random]") {
  std::vector<double> out(37);
  cpu::uniform_kernel(out.data(), 37, 99, 8, -2.0, 3.0);
  for (size_t i = 0; i < out.size(); ++i)
    CHECK(out[i] == -2.0 + 5.0 * static_cast<double>(uint32_to_uniform(philox_word(99, 8, i))));
}

#if defined(__AVX512F__)
TEST_CASE("philox4x32_10_x16 gives the 16 blocks of philox4x32_10, across a carry into the counter's high half",
          "[random]") {
  for (uint64_t first : {uint64_t{0}, uint64_t{77}, (uint64_t{1} << 32) - 5, (uint64_t{3} << 32) - 16,
                         ~uint64_t{0} - 7}) {
    const uint64_t offset = 0x5555'0000'1234ull, seed = 99;
    __m512i words[4];
    cpu::philox4x32_10_x16(first, offset, seed, words);
    alignas(64) uint32_t w[4][16];
    for (int k = 0; k < 4; ++k) _mm512_store_si512(w[k], words[k]);
    for (int l = 0; l < 16; ++l) {
      const remat::kernels::Philox4 r = remat::kernels::philox4x32_10(first + static_cast<uint64_t>(l), offset, seed);
      for (int k = 0; k < 4; ++k) CHECK(w[k][l] == r.x[k]);
    }
  }
}
#endif
