// Mirrors ATen/native/cpu/BinaryOpsKernel.cpp's mul_kernel and UnaryOpsKernel.cpp's conj_kernel for
// complex elements (c10::complex<float>, c10::complex<double>): what the rotary embeddings need.
#pragma once

#include <complex>
#include <cstdint>

#include "kernels/cpu/loops.h"

namespace remat::kernels::cpu {

// (ar + i ai)(br + i bi) = (ar br - ai bi) + i (ar bi + ai br), written out: std::complex's operator*
// checks for infinities and NaNs (C99 Annex G, __mulsc3), PyTorch's vectorized product does not.
template <class T>
inline std::complex<T> complex_mul(std::complex<T> a, std::complex<T> b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

// out = a * b over a loop of three operands (out, a, b), broadcast by their strides.
template <class T>
void complex_mul_kernel(const LoopShape& s, std::complex<T>* out, const std::complex<T>* a, const std::complex<T>* b) {
  parallel_for_each_run(s, [&](const auto& off, int64_t n, const auto& st) {
    if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
      // Contiguous runs as interleaved (re, im) pairs of T: a loop the compiler vectorises (the
      // rotary's q and k times freqs_cis; element by element through std::complex it ran at a
      // tenth of memory's bandwidth). The same products and sums, so the same bits.
      T* __restrict o = reinterpret_cast<T*>(out + off[0]);
      const T* __restrict x = reinterpret_cast<const T*>(a + off[1]);
      const T* __restrict y = reinterpret_cast<const T*>(b + off[2]);
      for (int64_t i = 0; i < n; ++i) {
        const T xr = x[2 * i], xi = x[2 * i + 1], yr = y[2 * i], yi = y[2 * i + 1];
        o[2 * i] = xr * yr - xi * yi;
        o[2 * i + 1] = xr * yi + xi * yr;
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      out[off[0] + i * st[0]] = complex_mul(a[off[1] + i * st[1]], b[off[2] + i * st[2]]);
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
