// Mirrors ATen/native/cpu/SoftMaxKernel.cpp: softmax and log_softmax over one dim, and their
// backward kernels, computed in acc_t (float for BFloat16/Half).
//
// A contiguous tensor is seen as [outer, dim_size, inner]: the softmax dim has stride inner.
// inner == 1 (the last dim, the common case) walks one row at a time (a bfloat16 row is widened
// to float and runs the float code; softmax's backward runs one AVX-512 row function for float
// and bfloat16 alike); inner > 1 processes a whole [dim_size, inner] slab with per-column running
// values, so every pass reads memory in order.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/bfloat16_convert.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/pointwise.h"
#include "kernels/cpu/vec_exp.h"
#include "kernels/cpu/vectorized_rows.h"
#include "kernels/cpu/x86_intrinsics.h"

namespace remat::kernels::cpu {

#if defined(__AVX512F__)
// y = exp(x - max) / sum(exp(x - max)) over one float or bfloat16 row of n, in float: the max and
// the sum in 16 lanes, combined in a fixed order; the exponentials (exp16, vec_exp.h) kept in
// `e` (n floats; y itself for float), then scaled by 1/sum and rounded once. Through Eigen's
// passes over widened rows bfloat16 softmax ran at 31% of copy at attention's 128-element rows,
// slower than float (Xeon with AMX, 1 thread), and sac-mm recomputes it in every backward.
template <class T>
void softmax_row_avx512(T* y, const T* x, int64_t n, float* e) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  __m512 mx = _mm512_set1_ps(kNegInf);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) mx = _mm512_max_ps(mx, load16_as_float(x + i));
  if (i < n) mx = _mm512_max_ps(mx, load_tail_as_float(x, i, n, kNegInf));
  // a NaN anywhere reaches the sum below (exp(NaN - max)), so every output is NaN, as PyTorch's
  const __m512 row_max = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  __m512 acc = _mm512_setzero_ps();
  const __m512 neg_inf = _mm512_set1_ps(kNegInf);
  for (i = 0; i + 16 <= n; i += 16) {
    const __m512 v = load16_as_float(x + i);
    // 16 masked entries (-inf, a causal mask's upper triangle: about half of attention's rows)
    // are 16 zeros, exp's own value for them; adding them would change no bit of the sum
    if (_mm512_cmp_ps_mask(v, neg_inf, _CMP_EQ_OQ) == 0xFFFF) {
      _mm512_storeu_ps(e + i, _mm512_setzero_ps());
      continue;
    }
    const __m512 ex = exp16(_mm512_sub_ps(v, row_max));
    _mm512_storeu_ps(e + i, ex);
    acc = _mm512_add_ps(acc, ex);
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 ex = _mm512_maskz_mov_ps(m, exp16(_mm512_sub_ps(load_tail_as_float(x, i, n, 0.0f), row_max)));
    _mm512_mask_storeu_ps(e + i, m, ex);
    acc = _mm512_add_ps(acc, ex);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(acc));
  for (i = 0; i + 32 <= n; i += 32)  // two vectors a store (store32_from_float: one bfloat16 check)
    store32_from_float(y + i, _mm512_mul_ps(_mm512_loadu_ps(e + i), inv),
                       _mm512_mul_ps(_mm512_loadu_ps(e + i + 16), inv));
  for (; i + 16 <= n; i += 16) store16_from_float(y + i, _mm512_mul_ps(_mm512_loadu_ps(e + i), inv));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    store_tail_from_float(y, i, n, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, e + i), inv));
  }
}
#endif

// forward: y = exp(x - max) / sum(exp(x - max))          (log: y = (x - max) - log(sum))
template <class T>
void softmax_forward(T* out, const T* in, int64_t outer, int64_t dim_size, int64_t inner, bool log) {
  using A = acc_t<T>;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
    if (inner == 1 && !log) {
      parallel_for(0, outer, rows_grain(dim_size), [&](int64_t b, int64_t e) {
        std::vector<float> storage;  // bfloat16: the row's exponentials in float
        float* buf = std::is_same_v<T, float> ? nullptr : aligned_floats(storage, dim_size);
        for (int64_t r = b; r < e; ++r) {
          T* y = out + r * dim_size;
          softmax_row_avx512(y, in + r * dim_size, dim_size, buf != nullptr ? buf : reinterpret_cast<float*>(y));
        }
      });
      return;
    }
  }
#endif
  if constexpr (kFloatBlocks<T>) {
    if (inner == 1) {
      parallel_for(0, outer, rows_grain(dim_size), [&](int64_t b, int64_t e) {
        bf16_rows<1>(out, {in}, b, e, dim_size, [&](int64_t, float* y, const std::array<const float*, 1>& x) {
          softmax_forward<float>(y, x[0], 1, dim_size, 1, log);
        });
      });
      return;
    }
  }
  if (inner == 1) {
    parallel_for(0, outer, rows_grain(dim_size), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* x = in + r * dim_size;
        T* y = out + r * dim_size;
        const A max = rows::max(x, dim_size);
        if constexpr (kEigenVectorizable<T>) {
          // exp once per element: y = exp(x - max), then scaled (or shifted, for log) in place
          Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> ya(y, dim_size);
          rows::Row<T> xa(x, dim_size);
          if (log) {
            const A log_sum = std::log(rows::sum_exp(x, dim_size, max));
            ya = (xa - max) - log_sum;
          } else {
            ya = kernel_exp(xa - max);
            ya *= A(1) / ya.sum();
          }
          continue;
        }
        const A sum = rows::sum_exp(x, dim_size, max);
        if (log) {
          // (x - max) - log(sum), not x - (max + log(sum)): the shift would round at large max
          A log_sum = std::log(sum);
          for (int64_t k = 0; k < dim_size; ++k) y[k] = T((A(x[k]) - max) - log_sum);
        } else {
          A inv = A(1) / sum;
          for (int64_t k = 0; k < dim_size; ++k) y[k] = T(std::exp(A(x[k]) - max) * inv);
        }
      }
    });
    return;
  }
  const int64_t slab = dim_size * inner;
  parallel_for(0, outer, rows_grain(slab), [&](int64_t b, int64_t e) {
    std::vector<A> max(static_cast<size_t>(inner)), sum(static_cast<size_t>(inner));
    for (int64_t o = b; o < e; ++o) {
      const T* x = in + o * slab;
      T* y = out + o * slab;
      std::fill(max.begin(), max.end(), -std::numeric_limits<A>::infinity());
      std::fill(sum.begin(), sum.end(), A(0));
      for (int64_t k = 0; k < dim_size; ++k)
        for (int64_t i = 0; i < inner; ++i) max[i] = std::max(max[i], A(x[k * inner + i]));
      for (int64_t k = 0; k < dim_size; ++k)
        for (int64_t i = 0; i < inner; ++i) sum[i] += std::exp(A(x[k * inner + i]) - max[i]);
      if (log) {
        for (int64_t i = 0; i < inner; ++i) sum[i] = std::log(sum[i]);
        for (int64_t k = 0; k < dim_size; ++k)
          for (int64_t i = 0; i < inner; ++i) y[k * inner + i] = T((A(x[k * inner + i]) - max[i]) - sum[i]);
      } else {
        for (int64_t i = 0; i < inner; ++i) sum[i] = A(1) / sum[i];
        for (int64_t k = 0; k < dim_size; ++k)
          for (int64_t i = 0; i < inner; ++i) y[k * inner + i] = T(std::exp(A(x[k * inner + i]) - max[i]) * sum[i]);
      }
    }
  });
}

#if defined(__AVX512F__)
// dx = y * (dy - sum(dy * y)) over one float or bfloat16 row (bfloat16 straight from its data, no
// widened rows), 0 where mask (when given) is true: the dot in 16 float lanes, combined in a fixed
// order, then the tail; each dx computed in float and rounded once. Float rows ran through Eigen's
// dot and a second expression at 0.7x PyTorch's speed at attention's 128-element rows.
template <class T>
void softmax_backward_row_avx512(T* dx, const T* dy, const T* y, const bool* mask, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(load16_as_float(dy + i), load16_as_float(y + i), acc);
  float dot = _mm512_reduce_add_ps(acc);
  for (int64_t k = i; k < n; ++k) dot += float(dy[k]) * float(y[k]);
  const __m512 d = _mm512_set1_ps(dot);
  auto grad16 = [&](int64_t j) {
    __m512 r = _mm512_mul_ps(load16_as_float(y + j), _mm512_sub_ps(load16_as_float(dy + j), d));
    if (mask != nullptr) {
      const __m128i mb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(mask + j));
      r = _mm512_maskz_mov_ps(_mm512_testn_epi32_mask(_mm512_cvtepu8_epi32(mb), _mm512_cvtepu8_epi32(mb)), r);
    }
    return r;
  };
  for (i = 0; i + 32 <= n; i += 32) store32_from_float(dx + i, grad16(i), grad16(i + 16));  // one bfloat16 check
  for (; i + 16 <= n; i += 16) store16_from_float(dx + i, grad16(i));
  for (int64_t k = i; k < n; ++k)
    dx[k] = mask != nullptr && mask[k] ? T(0.0f) : T(float(y[k]) * (float(dy[k]) - dot));
}
#endif

// forward: y = softmax(x)      backward: dx = y * (dy - sum(dy * y))
// forward: y = log_softmax(x)  backward: dx = dy - exp(y) * sum(dy)
template <class T>
void softmax_backward(T* grad_in, const T* grad_out, const T* out, int64_t outer, int64_t dim_size, int64_t inner,
                      bool log) {
  using A = acc_t<T>;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
    if (inner == 1 && !log) {
      parallel_for(0, outer, rows_grain(dim_size), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r)
          softmax_backward_row_avx512(grad_in + r * dim_size, grad_out + r * dim_size, out + r * dim_size, nullptr,
                                      dim_size);
      });
      return;
    }
  }
#endif
  if constexpr (kFloatBlocks<T>) {
    if (inner == 1) {
      parallel_for(0, outer, rows_grain(dim_size), [&](int64_t b, int64_t e) {
        bf16_rows<2>(grad_in, {grad_out, out}, b, e, dim_size,
                     [&](int64_t, float* dx, const std::array<const float*, 2>& x) {
                       softmax_backward<float>(dx, x[0], x[1], 1, dim_size, 1, log);
                     });
      });
      return;
    }
  }
  if (inner == 1) {
    parallel_for(0, outer, rows_grain(dim_size), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* dy = grad_out + r * dim_size;
        const T* y = out + r * dim_size;
        T* dx = grad_in + r * dim_size;
        if constexpr (kEigenVectorizable<T>) {
          Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> dxa(dx, dim_size);
          rows::Row<T> dya(dy, dim_size), ya(y, dim_size);
          if (log) {
            dxa = dya - kernel_exp(ya) * rows::sum(dy, dim_size);
          } else {
            dxa = ya * (dya - rows::dot(dy, y, dim_size));
          }
          continue;
        }
        A dot = 0;
        if (log) {
          for (int64_t k = 0; k < dim_size; ++k) dot += A(dy[k]);
          for (int64_t k = 0; k < dim_size; ++k) dx[k] = T(A(dy[k]) - std::exp(A(y[k])) * dot);
        } else {
          for (int64_t k = 0; k < dim_size; ++k) dot += A(dy[k]) * A(y[k]);
          for (int64_t k = 0; k < dim_size; ++k) dx[k] = T(A(y[k]) * (A(dy[k]) - dot));
        }
      }
    });
    return;
  }
  const int64_t slab = dim_size * inner;
  parallel_for(0, outer, rows_grain(slab), [&](int64_t b, int64_t e) {
    std::vector<A> dot(static_cast<size_t>(inner));
    for (int64_t o = b; o < e; ++o) {
      const T* dy = grad_out + o * slab;
      const T* y = out + o * slab;
      T* dx = grad_in + o * slab;
      std::fill(dot.begin(), dot.end(), A(0));
      for (int64_t k = 0; k < dim_size; ++k)
        for (int64_t i = 0; i < inner; ++i)
          dot[i] += log ? A(dy[k * inner + i]) : A(dy[k * inner + i]) * A(y[k * inner + i]);
      for (int64_t k = 0; k < dim_size; ++k) {
        for (int64_t i = 0; i < inner; ++i) {
          int64_t at = k * inner + i;
          dx[at] = log ? T(A(dy[at]) - std::exp(A(y[at])) * dot[i]) : T(A(y[at]) * (A(dy[at]) - dot[i]));
        }
      }
    }
  });
}

// _masked_softmax over the last dim, rows of dim_size elements; row r reads mask row
// r % mask_rows (true: masked out; mask_rows = rows for a mask of the input's shape, L for an
// [L, S] mask every batch and head shares).
// forward: y = masked ? 0 : exp(x - max) / sum(exp(x - max)), max and sum over the unmasked
//          (a row whose every element is masked is all zeros)
// One read of x and the mask and one write of y per row: the row is filled with x, -inf where
// masked, then its max taken, exponentiated and scaled in place (in cache; for float with AVX-512
// by softmax_row_avx512, which reads each element before it writes it: 0.415 -> 0.290 ms at
// [8, 4, 128, 128] under a causal mask, 1 thread, where Eigen's exp took every -inf in turn).
template <class T>
void masked_softmax_row(T* y, const T* x, const bool* m, int64_t dim_size) {
  using A = acc_t<T>;
  const T kNegInf = T(-std::numeric_limits<float>::infinity());
  // the mask read as bytes (a bool is 0 or 1), so that the select vectorizes
  const uint8_t* mb = reinterpret_cast<const uint8_t*>(m);
  unsigned masked = 1;
#pragma omp simd reduction(& : masked)
  for (int64_t k = 0; k < dim_size; ++k) {
    const unsigned mk = mb[k];
    y[k] = mk ? kNegInf : x[k];
    masked &= mk;
  }
  if (masked) {
    std::fill(y, y + dim_size, T(0));
    return;
  }
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {  // float and widened bfloat16 rows: softmax's own row, in place
    softmax_row_avx512(y, y, dim_size, y);
    return;
  }
#endif
  const A row_max = rows::max(y, dim_size);
  if constexpr (kEigenVectorizable<T>) {
    // exp once per element (exp(-inf) = 0 at the masked), then scaled in place
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> ya(y, dim_size);
    ya = kernel_exp(ya - row_max);
    ya *= A(1) / ya.sum();
  } else {
    const A inv = A(1) / rows::sum_exp(y, dim_size, row_max);
    for (int64_t k = 0; k < dim_size; ++k) y[k] = T(std::exp(A(y[k]) - row_max) * inv);
  }
}

template <class T>
void masked_softmax_forward(T* out, const T* in, const bool* mask, int64_t rows, int64_t dim_size,
                            int64_t mask_rows) {
  if constexpr (kFloatBlocks<T>) {
    parallel_for(0, rows, rows_grain(dim_size), [&](int64_t b, int64_t e) {
      bf16_rows<1>(out, {in}, b, e, dim_size, [&](int64_t r, float* y, const std::array<const float*, 1>& x) {
        masked_softmax_row<float>(y, x[0], mask + (r % mask_rows) * dim_size, dim_size);
      });
    });
  } else {
    parallel_for(0, rows, rows_grain(dim_size), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        masked_softmax_row<T>(out + r * dim_size, in + r * dim_size, mask + (r % mask_rows) * dim_size, dim_size);
    });
  }
}

// forward: y = _masked_softmax(x, mask)
// backward: dx = masked ? 0 : y * (dy - sum(dy * y))
// (y is 0 where masked, so the sum over the row is the sum over the unmasked for a finite dy)
template <class T>
void masked_softmax_backward_row(T* dx, const T* dy, const T* y, const bool* m, int64_t dim_size) {
  using A = acc_t<T>;
  const A dot = rows::dot(dy, y, dim_size);
  if constexpr (kEigenVectorizable<T>) {
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(dx, dim_size) =
        rows::Row<T>(y, dim_size) * (rows::Row<T>(dy, dim_size) - dot);
    const uint8_t* mb = reinterpret_cast<const uint8_t*>(m);
#pragma omp simd
    for (int64_t k = 0; k < dim_size; ++k) dx[k] = mb[k] ? T(0) : dx[k];
  } else {
    for (int64_t k = 0; k < dim_size; ++k) dx[k] = m[k] ? T(0) : T(A(y[k]) * (A(dy[k]) - dot));
  }
}

template <class T>
void masked_softmax_backward(T* grad_in, const T* grad_out, const T* out, const bool* mask, int64_t rows,
                             int64_t dim_size, int64_t mask_rows) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
    parallel_for(0, rows, rows_grain(dim_size), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        softmax_backward_row_avx512(grad_in + r * dim_size, grad_out + r * dim_size, out + r * dim_size,
                                    mask + (r % mask_rows) * dim_size, dim_size);
    });
    return;
  }
#endif
  if constexpr (kFloatBlocks<T>) {
    parallel_for(0, rows, rows_grain(dim_size), [&](int64_t b, int64_t e) {
      bf16_rows<2>(grad_in, {grad_out, out}, b, e, dim_size,
                   [&](int64_t r, float* dx, const std::array<const float*, 2>& x) {
                     masked_softmax_backward_row<float>(dx, x[0], x[1], mask + (r % mask_rows) * dim_size, dim_size);
                   });
    });
  } else {
    parallel_for(0, rows, rows_grain(dim_size), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r)
        masked_softmax_backward_row<T>(grad_in + r * dim_size, grad_out + r * dim_size, out + r * dim_size,
                                       mask + (r % mask_rows) * dim_size, dim_size);
    });
  }
}

}  // namespace remat::kernels::cpu
