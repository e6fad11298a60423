// Mirrors ATen/native/cpu/BinaryOpsKernel.cpp's mul_kernel and UnaryOpsKernel.cpp's conj_kernel for
// complex elements (c10::complex<float>, c10::complex<double>): what the rotary embeddings need.
#pragma once

#include <complex>
#include <cstdint>

#include "kernels/cpu/loops.h"
#include "kernels/cpu/x86_intrinsics.h"

namespace remat::kernels::cpu {

// (ar + i ai)(br + i bi) = (ar br - ai bi) + i (ar bi + ai br), written out: std::complex's operator*
// checks for infinities and NaNs (C99 Annex G, __mulsc3), PyTorch's vectorized product does not.
template <class T>
inline std::complex<T> complex_mul(std::complex<T> a, std::complex<T> b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

#if defined(__AVX512F__)
// n complex floats as interleaved (re, im) pairs, 8 a register: x times y, and x with re and im
// swapped times y's imaginary parts, then subtracted in the real lanes and added in the imaginary
// ones: the products and sums of complex_mul, unfused, so its bits. The rotary's runs are 8 complex
// numbers (the Llama debugmodel's head_dim 16): the compiler's loop took 2.7x PyTorch's time there.
inline void complex_mul_run_avx512(float* o, const float* x, const float* y, int64_t n) {
  const __mmask16 imag_lanes = 0xAAAA;
  for (int64_t i = 0; i < n; i += 8) {
    const __mmask16 k = n - i >= 8 ? __mmask16(0xFFFF) : __mmask16((1u << (2 * (n - i))) - 1);
    const __m512 xv = _mm512_maskz_loadu_ps(k, x + 2 * i), yv = _mm512_maskz_loadu_ps(k, y + 2 * i);
    const __m512 re_im = _mm512_mul_ps(xv, _mm512_moveldup_ps(yv));  // xr yr, xi yr
    const __m512 swapped = _mm512_mul_ps(_mm512_permute_ps(xv, 0xB1), _mm512_movehdup_ps(yv));  // xi yi, xr yi
    _mm512_mask_storeu_ps(o + 2 * i, k, _mm512_mask_add_ps(_mm512_sub_ps(re_im, swapped), imag_lanes, re_im, swapped));
  }
}
#endif

// out = a * b over a loop of three operands (out, a, b), broadcast by their strides; in blocks of
// rows (parallel_for_each_row_block), so that short runs cost one vector product each.
template <class T>
void complex_mul_kernel(const LoopShape& s, std::complex<T>* out, const std::complex<T>* a, const std::complex<T>* b) {
  parallel_for_each_row_block(s, [&](const auto& off, int64_t n, const auto& st, int64_t rows, const auto& rs) {
    for (int64_t r = 0; r < rows; ++r) {
      std::complex<T>* out_row = out + off[0] + r * rs[0];
      const std::complex<T>* a_row = a + off[1] + r * rs[1];
      const std::complex<T>* b_row = b + off[2] + r * rs[2];
      if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
        // Contiguous runs as interleaved (re, im) pairs of T: a vector loop (the rotary's q and k
        // times freqs_cis; element by element through std::complex it ran at a tenth of memory's
        // bandwidth). The same products and sums, so the same bits.
        T* __restrict o = reinterpret_cast<T*>(out_row);
        const T* __restrict x = reinterpret_cast<const T*>(a_row);
        const T* __restrict y = reinterpret_cast<const T*>(b_row);
#if defined(__AVX512F__)
        if constexpr (std::is_same_v<T, float>) {
          complex_mul_run_avx512(o, x, y, n);
          continue;
        }
#endif
        for (int64_t i = 0; i < n; ++i) {
          const T xr = x[2 * i], xi = x[2 * i + 1], yr = y[2 * i], yi = y[2 * i + 1];
          o[2 * i] = xr * yr - xi * yi;
          o[2 * i + 1] = xr * yi + xi * yr;
        }
        continue;
      }
      for (int64_t i = 0; i < n; ++i) out_row[i * st[0]] = complex_mul(a_row[i * st[1]], b_row[i * st[2]]);
    }
  });
}

// out = conj(a) over a loop of two operands.
template <class T>
void conj_kernel(const LoopShape& s, std::complex<T>* out, const std::complex<T>* a) {
  parallel_for_each_run(s, [&](const auto& off, int64_t n, const auto& st) {
    for (int64_t i = 0; i < n; ++i) out[off[0] + i * st[0]] = std::conj(a[off[1] + i * st[1]]);
  });
}

}  // namespace remat::kernels::cpu
