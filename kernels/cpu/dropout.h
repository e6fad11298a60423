// Mirrors ATen/native/Dropout.cpp (_masked_scale): the elementwise half of dropout, and the forward
// in one pass (dropout_forward: the mask and the scaled values together). The keep mask follows
// dropout_mask_kernel in kernels/cpu/random.h (the Philox offset rule).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/bfloat16_convert.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/pointwise.h"
#include "kernels/cpu/random.h"
#include "kernels/cpu/streaming_store.h"
#include "kernels/cpu/x86_intrinsics.h"

namespace remat::kernels::cpu {

#if defined(__AVX512F__)
// masked_scale for float and bfloat16, 16 lanes at a time (the same products and the same rounding
// as the scalar loop); `stream`: the output's whole lines around the caches (streaming_store.h).
// At [4096, 4096], Xeon with AMX, float, against the `omp simd` loop below: 1 thread 10.3-11.3 ->
// 8.7-9.7 ms, 2 threads 4.1-4.3 -> 3.3; streamed 5.4-5.5 and 2.7 ms. bfloat16 went through a
// widened block (widen, scale, round: three passes over an L1 buffer) at 67% of copy on 1 thread.
template <class T>
void masked_scale_avx512(T* out, const T* in, const bool* mask, int64_t n, float s, bool stream) {
  parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
    const uint8_t* m = reinterpret_cast<const uint8_t*>(mask);
    const int64_t head = stream ? b + elements_to_alignment(out + b, 64, e - b) : b;
    int64_t i = b;
    for (; i < head; ++i) out[i] = T(float(in[i]) * (static_cast<float>(m[i]) * s));
    const __m512 sv = _mm512_set1_ps(s);
    auto scaled = [&](int64_t j) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(m + j));
      const __m512 keep = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(bytes));
      return _mm512_mul_ps(load16_as_float(in + j), _mm512_mul_ps(keep, sv));
    };
    for (; i + 32 <= e; i += 32) {  // two vectors a store (float_to_bf16x32: one bfloat16 check)
      const __m512 lo = scaled(i), hi = scaled(i + 16);
      if (!stream) {
        store32_from_float(out + i, lo, hi);
      } else if constexpr (std::is_same_v<T, float>) {
        _mm512_stream_ps(out + i, lo);
        _mm512_stream_ps(out + i + 16, hi);
      } else {  // a whole line
        _mm512_stream_si512(reinterpret_cast<__m512i*>(out + i), float_to_bf16x32(lo, hi));
      }
    }
    for (; i + 16 <= e; i += 16) {
      const __m512 r = scaled(i);
      if (!stream) {
        store16_from_float(out + i, r);
      } else if constexpr (std::is_same_v<T, float>) {
        _mm512_stream_ps(out + i, r);
      } else {  // 32 bytes, aligned: two make a line
        _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i), float_to_bf16x16(r));
      }
    }
    for (; i < e; ++i) out[i] = T(float(in[i]) * (static_cast<float>(m[i]) * s));
    if (stream) stream_fence();
  });
}
#endif

// forward: out = x * mask * scale         (scale = 1 / (1 - p); 0 for p = 1)
// backward: dx = dout * mask * scale      (the same map applied to the gradient)
template <class T>
void masked_scale(T* out, const T* in, const bool* mask, int64_t n, double scale) {
  using A = acc_t<T>;
  const A keep_scale = A(scale);
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
    masked_scale_avx512(out, in, mask, n, static_cast<float>(keep_scale),
                        out != in && stream_output(n * static_cast<int64_t>(2 * sizeof(T) + sizeof(bool))));
    return;
  }
#endif
  parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
    // Locals and restrict: with `out` possibly aliasing the captured scale, the compiler reloads
    // it and branches per element instead of vectorising. mask ? s : 0 as float(mask) * s (exact).
    const A s = keep_scale;
    const uint8_t* __restrict m = reinterpret_cast<const uint8_t*>(mask);
    if constexpr (kFloatBlocks<T>) {  // widened a block at a time, scaled as float, rounded once
      alignas(64) float buf[kFloatBlock];
      for (int64_t lo = b; lo < e; lo += kFloatBlock) {
        const int64_t len = std::min(e - lo, kFloatBlock);
        bf16_to_float(in + lo, buf, len);
#pragma omp simd
        for (int64_t k = 0; k < len; ++k) buf[k] = buf[k] * (static_cast<float>(m[lo + k]) * s);
        float_to_bf16(buf, out + lo, len);
      }
    } else {
      const T* __restrict x = in;
      T* __restrict o = out;
#pragma omp simd
      for (int64_t i = b; i < e; ++i) o[i] = T(A(x[i]) * (static_cast<A>(m[i]) * s));
    }
  });
}

// The forward in one pass: mask[i] = U_i < 1 - p (dropout_mask_kernel's rule) and
// out[i] = in[i] * (mask[i] * scale), the same bits as dropout_mask_kernel then masked_scale. With
// AVX-512 (BW, and BMI2's pdep) for float and bfloat16: 64 elements per 16 Philox blocks, the
// mask's 64 bytes stored from one bit mask, the scale applied to the values still in registers,
// instead of a byte store per element and a second pass reading the mask back.
template <class T>
void dropout_forward(T* out, bool* mask, const T* in, int64_t n, uint64_t seed, uint64_t offset, double p,
                     double scale) {
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__BMI2__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
    const float keep = static_cast<float>(1.0 - p);
    const float s = static_cast<float>(scale);
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
      auto scalar = [&](int64_t lo, int64_t hi) {
        for_each_philox_word(seed, offset, lo, hi, [&](int64_t i, uint32_t word) {
          const bool k = uint32_to_uniform(word) < keep;
          mask[i] = k;
          out[i] = T(float(in[i]) * (static_cast<float>(k) * s));
        });
      };
      const int64_t first = std::min(e, (b + 63) / 64 * 64);  // whole groups of 16 blocks from here
      scalar(b, first);
      const __m512 keep_v = _mm512_set1_ps(keep), unit = _mm512_set1_ps(1.0f / 16777216.0f), s_v = _mm512_set1_ps(s);
      const __m512i one = _mm512_set1_epi8(1);
      uint8_t* m8 = reinterpret_cast<uint8_t*>(mask);
      int64_t i = first;
      for (; i + 64 <= e; i += 64) {
        __m512i words[4];
        philox4x32_10_x16(static_cast<uint64_t>(i / 4), offset, seed, words);
        uint64_t bits = 0;  // bit 4 l + w: word w of block i / 4 + l (element i + 4 l + w)
        for (int w = 0; w < 4; ++w) {
          const __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(words[w], 8)), unit);
          const __mmask16 kept = _mm512_cmp_ps_mask(u, keep_v, _CMP_LT_OQ);
          bits |= _pdep_u64(kept, 0x1111111111111111ull << w);
        }
        _mm512_storeu_si512(m8 + i, _mm512_maskz_mov_epi8(bits, one));
        auto scaled = [&](int v) {
          const __mmask16 k = static_cast<__mmask16>(bits >> (16 * v));
          const __m512 factor = _mm512_maskz_mov_ps(k, s_v);  // mask ? s : 0, as float(mask) * s
          return _mm512_mul_ps(load16_as_float(in + i + 16 * v), factor);
        };
        store32_from_float(out + i, scaled(0), scaled(1));  // two vectors a store: one bfloat16 check
        store32_from_float(out + i + 32, scaled(2), scaled(3));
      }
      scalar(i, e);
    });
    return;
  }
#endif
  dropout_mask_kernel(mask, n, seed, offset, p);
  masked_scale(out, in, mask, n, scale);
}

}  // namespace remat::kernels::cpu
