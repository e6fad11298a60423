// Mirrors ATen/native/cpu/DistributionKernels.cpp over the Philox rule of
// engine/core/generator.h: element i of a call depends only on (seed, offset, i).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/x86_intrinsics.h"
#include "kernels/philox.h"

namespace remat::kernels::cpu {

// f(i, philox_word(seed, offset, i)) for i in [b, e): one Philox block per four elements, not
// one per element (the word of element i is word i % 4 of block i / 4).
template <class F>
void for_each_philox_word(uint64_t seed, uint64_t offset, int64_t b, int64_t e, const F& f) {
  int64_t i = b;
  while (i < e) {
    const uint64_t block = static_cast<uint64_t>(i) / 4;
    const Philox4 r = philox4x32_10(block, offset, seed);
    const int64_t end = std::min<int64_t>(e, static_cast<int64_t>(block * 4 + 4));
    for (; i < end; ++i) f(i, r.x[static_cast<uint64_t>(i) % 4]);
  }
}

// out[i] = from + (to - from) * U_i for a contiguous out.
template <class T>
void uniform_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, double from, double to) {
  parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
    for_each_philox_word(seed, offset, b, e, [&](int64_t i, uint32_t word) {
      out[i] = static_cast<T>(from + (to - from) * static_cast<double>(uint32_to_uniform(word)));
    });
  });
}

// Box-Muller on the words of block i/2: element i uses words 2*(i%2) and 2*(i%2)+1.
inline float philox_normal(uint64_t seed, uint64_t offset, uint64_t i) {
  Philox4 r = philox4x32_10(i / 2, offset, seed);
  int w = static_cast<int>(i % 2) * 2;
  float u1 = 1.0f - uint32_to_uniform(r.x[w]);  // (0, 1]: log stays finite
  float u2 = uint32_to_uniform(r.x[w + 1]);
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853071795864f * u2);
}

template <class T>
void normal_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double stddev) {
  parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      out[i] = static_cast<T>(mean + stddev * static_cast<double>(philox_normal(seed, offset, static_cast<uint64_t>(i))));
  });
}

#if defined(__AVX512F__)
// Philox4x32-10 of the 16 blocks first .. first + 15, one per lane: words[w] holds word w of each
// (the same arithmetic as philox4x32_10, 32x32->64 products in even and odd lanes).
inline void philox4x32_10_x16(uint64_t first, uint64_t offset, uint64_t seed, __m512i words[4]) {
  // counters first + l as 32-bit halves: the low half wraps below its start where the add carries
  const __m512i lo0 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first)));
  __m512i c0 = _mm512_add_epi32(lo0, _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  const __mmask16 carry = _mm512_cmplt_epu32_mask(c0, lo0);
  __m512i c1 = _mm512_mask_add_epi32(_mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first >> 32))), carry,
                                     _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(first >> 32))),
                                     _mm512_set1_epi32(1));
  __m512i c2 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(offset)));
  __m512i c3 = _mm512_set1_epi32(static_cast<int>(static_cast<uint32_t>(offset >> 32)));
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u)), m1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  constexpr __mmask16 kOdd = 0xAAAA, kEven = 0x5555;
  // lo and hi 32 bits of m * c in every lane: the even lanes' 64-bit products and the odd lanes'
  // (m's odd lanes equal its even ones), each half moved into the other lanes by one masked
  // swap of 32-bit neighbours
  auto mulhilo = [&](__m512i m, __m512i c, __m512i* h) {
    const __m512i even = _mm512_mul_epu32(m, c);                          // lanes 0, 2, ...
    const __m512i odd = _mm512_mul_epu32(m, _mm512_srli_epi64(c, 32));    // lanes 1, 3, ...
    *h = _mm512_mask_shuffle_epi32(odd, kEven, even, _MM_PERM_CDAB);
    return _mm512_mask_shuffle_epi32(even, kOdd, odd, _MM_PERM_CDAB);
  };
  for (int round = 0; round < 10; ++round) {
    __m512i hi0, hi1;
    const __m512i lo0 = mulhilo(m0, c0, &hi0), lo1 = mulhilo(m1, c2, &hi1);
    // a ^ b ^ k in one ternary-logic op (0x96: three-way xor)
    const __m512i n0 = _mm512_ternarylogic_epi32(hi1, c1, _mm512_set1_epi32(static_cast<int>(k0)), 0x96);
    const __m512i n2 = _mm512_ternarylogic_epi32(hi0, c3, _mm512_set1_epi32(static_cast<int>(k1)), 0x96);
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  words[0] = c0;
  words[1] = c1;
  words[2] = c2;
  words[3] = c3;
}
#endif

// Dropout keep mask: keep element i iff U_i < 1 - p (compared in float on every device). With
// AVX-512, 16 Philox blocks (64 elements) at a time, the same bits as the scalar rule.
inline void dropout_mask_kernel(bool* mask, int64_t n, uint64_t seed, uint64_t offset, double p) {
  const float keep = static_cast<float>(1.0 - p);
  parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
    auto scalar = [&](int64_t lo, int64_t hi) {
      for_each_philox_word(seed, offset, lo, hi, [&](int64_t i, uint32_t word) { mask[i] = uint32_to_uniform(word) < keep; });
    };
#if defined(__AVX512F__)
    const int64_t first = std::min(e, (b + 63) / 64 * 64);  // whole groups of 16 blocks from here
    scalar(b, first);
    const __m512 keep_v = _mm512_set1_ps(keep), scale = _mm512_set1_ps(1.0f / 16777216.0f);
    int64_t i = first;
    for (; i + 64 <= e; i += 64) {
      __m512i words[4];
      philox4x32_10_x16(static_cast<uint64_t>(i / 4), offset, seed, words);
      __mmask16 kept[4];
      for (int w = 0; w < 4; ++w) {  // uint32_to_uniform(word) < keep, in float as the scalar rule
        const __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(words[w], 8)), scale);
        kept[w] = _mm512_cmp_ps_mask(u, keep_v, _CMP_LT_OQ);
      }
      for (int l = 0; l < 16; ++l)  // element i + 4 l + w is word w of block i / 4 + l
        for (int w = 0; w < 4; ++w) mask[i + 4 * l + w] = (kept[w] >> l) & 1;
    }
    scalar(i, e);
#else
    scalar(b, e);
#endif
  });
}

}  // namespace remat::kernels::cpu
