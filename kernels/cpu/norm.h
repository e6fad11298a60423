// Mirrors ATen/native/cpu/layer_norm_kernel.cpp (LayerNormKernelImpl, LayerNormBackwardKernelImpl)
// and the fused RMSNorm kernels: each of M rows of N contiguous elements is normalised on its own.
//
// T is the element type, A = acc_t<T> the type of every statistic and parameter (float for
// BFloat16/Half, as PyTorch keeps mean/rstd in float for reduced-precision inputs). weight and
// bias may be nullptr (no affine transform).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/cpu/bfloat16_convert.h"
#include "kernels/cpu/cpu_model.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/pointwise.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/vectorized_rows.h"

namespace remat::kernels::cpu {

namespace detail {
// dweight[j] = sum_i dy[i, j] * xhat[i, j], dbias[j] = sum_i dy[i, j]. Parallel over blocks of
// columns; each column sums its rows in order, so the result does not depend on the thread count.
template <class T, class A, class Xhat>
void norm_param_grads(A* dweight, A* dbias, const T* dy, int64_t M, int64_t N, const Xhat& xhat) {
  if (dweight == nullptr && dbias == nullptr) return;
  parallel_for(0, N, rows_grain(M), [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      if (dweight) dweight[j] = A(0);
      if (dbias) dbias[j] = A(0);
    }
    // Two loops, not one with both branches inside: each inner loop is then a plain vector loop.
    if (dweight) {
      for (int64_t i = 0; i < M; ++i) {
        const T* g = dy + i * N;
        for (int64_t j = j0; j < j1; ++j) dweight[j] += A(g[j]) * xhat(i, j);
      }
    }
    if (dbias) {
      for (int64_t i = 0; i < M; ++i) {
        const T* g = dy + i * N;
        for (int64_t j = j0; j < j1; ++j) dbias[j] += A(g[j]);
      }
    }
  });
}
}  // namespace detail

#if defined(__AVX512F__)
namespace detail {
// layer_norm_forward for R rows N apart (float or bfloat16, widened in registers, y rounded once),
// their passes interleaved: each pass (the sum, the sum of squared deviations, y) runs over the R
// rows together, so one row's horizontal sum, divide and square root overlap the other's work. A
// row at a time (three passes, four running sums) ran at Eigen's speed, bound by those latencies:
// [1024, 256] f32 0.11 ms both, two rows at once 0.06 (AMD Zen 4, 1 thread). Each row keeps one
// running sum and the same order of operations whatever R is, so a row's bits do not depend on
// which rows share its group (nor, then, on the thread count).
template <int R, class T>
void layer_norm_forward_rows_avx512(T* y, float* mean, float* rstd, const T* x, const float* weight,
                                    const float* bias, int64_t N, float eps) {
  const int64_t full = N / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (N - full)) - 1);
  __m512 acc[R], mu[R], r_v[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
  for (int64_t j = 0; j < full; j += 16)
    for (int r = 0; r < R; ++r) acc[r] = _mm512_add_ps(acc[r], load16_as_float(x + r * N + j));
  if (full < N)  // masked-off lanes load 0
    for (int r = 0; r < R; ++r) acc[r] = _mm512_add_ps(acc[r], load_tail_as_float(x + r * N, full, N, 0.0f));
  float mu_s[R];
  for (int r = 0; r < R; ++r) {
    mu_s[r] = _mm512_reduce_add_ps(acc[r]) / static_cast<float>(N);
    mu[r] = _mm512_set1_ps(mu_s[r]);
    acc[r] = _mm512_setzero_ps();
  }
  // two passes: the variance of centred values does not cancel catastrophically
  for (int64_t j = 0; j < full; j += 16)
    for (int r = 0; r < R; ++r) {
      const __m512 d = _mm512_sub_ps(load16_as_float(x + r * N + j), mu[r]);
      acc[r] = _mm512_fmadd_ps(d, d, acc[r]);
    }
  if (full < N)
    for (int r = 0; r < R; ++r) {
      const __m512 d = _mm512_maskz_sub_ps(tail, load_tail_as_float(x + r * N, full, N, 0.0f), mu[r]);
      acc[r] = _mm512_fmadd_ps(d, d, acc[r]);
    }
  for (int r = 0; r < R; ++r) {
    const float rs = 1.0f / std::sqrt(_mm512_reduce_add_ps(acc[r]) / static_cast<float>(N) + eps);
    mean[r] = mu_s[r];
    rstd[r] = rs;
    r_v[r] = _mm512_set1_ps(rs);
  }
  // (x - mean) * rstd, times weight, plus bias: one rounding each, as the Eigen form
  auto out = [&](int r, __m512 v, __m512 w, __m512 b) {
    v = _mm512_mul_ps(_mm512_sub_ps(v, mu[r]), r_v[r]);
    if (weight) v = _mm512_mul_ps(v, w);
    if (bias) v = _mm512_add_ps(v, b);
    return v;
  };
  const __m512 zero = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 32 <= full; j += 32) {  // two vectors a store (store32_from_float: one bfloat16 check)
    const __m512 w0 = weight ? _mm512_loadu_ps(weight + j) : zero, b0 = bias ? _mm512_loadu_ps(bias + j) : zero;
    const __m512 w1 = weight ? _mm512_loadu_ps(weight + j + 16) : zero;
    const __m512 b1 = bias ? _mm512_loadu_ps(bias + j + 16) : zero;
    for (int r = 0; r < R; ++r)
      store32_from_float(y + r * N + j, out(r, load16_as_float(x + r * N + j), w0, b0),
                         out(r, load16_as_float(x + r * N + j + 16), w1, b1));
  }
  for (; j < full; j += 16) {
    const __m512 w = weight ? _mm512_loadu_ps(weight + j) : zero, b = bias ? _mm512_loadu_ps(bias + j) : zero;
    for (int r = 0; r < R; ++r) store16_from_float(y + r * N + j, out(r, load16_as_float(x + r * N + j), w, b));
  }
  if (full < N) {
    const __m512 w = weight ? _mm512_maskz_loadu_ps(tail, weight + full) : zero;
    const __m512 b = bias ? _mm512_maskz_loadu_ps(tail, bias + full) : zero;
    for (int r = 0; r < R; ++r)
      store_tail_from_float(y + r * N, full, N, out(r, load_tail_as_float(x + r * N, full, N, 0.0f), w, b));
  }
}

// Rows [0, M) on the calling thread, two at a time (an odd last row alone).
template <class T>
void layer_norm_forward_avx512(T* y, float* mean, float* rstd, const T* x, const float* weight, const float* bias,
                               int64_t M, int64_t N, float eps) {
  int64_t i = 0;
  for (; i + 2 <= M; i += 2) {
    prefetch_row_ahead(x + (i + 1) * N, N);  // the rows after these two, while their passes run
    layer_norm_forward_rows_avx512<2>(y + i * N, mean + i, rstd + i, x + i * N, weight, bias, N, eps);
  }
  if (i < M) layer_norm_forward_rows_avx512<1>(y + i * N, mean + i, rstd + i, x + i * N, weight, bias, N, eps);
}

// Where layer_norm_forward takes the rows above: AMD from family 0x19 (Zen 4) on, where they were
// measured against the Eigen form: 1 thread, f32 [1024, 256] 0.11 -> 0.06 ms, [1024, 1024] 0.31 ->
// 0.21; bf16 0.11 -> 0.07, 0.34 -> 0.22. The Intel Xeon keeps the Eigen form (a row at a time in
// registers measured slower than it there, 0.37 against 0.31 ms; two at once not measured yet).
inline bool layer_norm_forward_in_row_pairs() {
  static const bool amd = amd_family_19h_or_later();
  return amd;
}
}  // namespace detail
#endif

// forward: mean = sum(x) / N;  rstd = 1 / sqrt(sum((x - mean)^2) / N + eps)
//          y = (x - mean) * rstd * weight + bias
template <class T, class A = acc_t<T>>
void layer_norm_forward(T* y, A* mean, A* rstd, const T* x, const A* weight, const A* bias, int64_t M, int64_t N,
                        double eps) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
    if (detail::layer_norm_forward_in_row_pairs()) {
      parallel_for(0, M, rows_grain(N), [&](int64_t b, int64_t e) {
        detail::layer_norm_forward_avx512(y + b * N, mean + b, rstd + b, x + b * N, weight, bias, e - b, N,
                                          static_cast<float>(eps));
      });
      return;
    }
  }
#endif
  if constexpr (kFloatBlocks<T>) {  // each row widened to float, run by the float kernel, rounded once
    parallel_for(0, M, rows_grain(N), [&](int64_t b, int64_t e) {
      bf16_rows<1>(y, {x}, b, e, N, [&](int64_t i, float* yi, const std::array<const float*, 1>& xi) {
        prefetch_row_ahead(x + i * N, N);
        layer_norm_forward<float>(yi, mean + i, rstd + i, xi[0], weight, bias, int64_t{1}, N, eps);
      });
    });
    return;
  }
  parallel_for(0, M, rows_grain(N), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* xi = x + i * N;
      T* yi = y + i * N;
      // The rows after this one, while its passes run (not for bfloat16's widened single rows,
      // M = 1, which prefetches the bfloat16 rows above). In the GPT step 0.12 -> 0.10 ms a call.
      if (M > 1) prefetch_row_ahead(xi, N);
      const A mu = rows::sum(xi, N) / A(N);
      // two passes: the variance of centred values does not cancel catastrophically
      const A sq = rows::sum_sq_dev(xi, N, mu);
      const A r = A(1) / std::sqrt(sq / A(N) + A(eps));
      mean[i] = mu;
      rstd[i] = r;
      if constexpr (kEigenVectorizable<T> && std::is_same_v<T, A>) {
        Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> ya(yi, N);
        rows::Row<T> xa(xi, N);
        if (weight && bias) {
          ya = (xa - mu) * r * rows::Row<A>(weight, N) + rows::Row<A>(bias, N);
        } else if (weight) {
          ya = (xa - mu) * r * rows::Row<A>(weight, N);
        } else if (bias) {
          ya = (xa - mu) * r + rows::Row<A>(bias, N);
        } else {
          ya = (xa - mu) * r;
        }
        continue;
      }
      for (int64_t j = 0; j < N; ++j) {
        A v = (A(xi[j]) - mu) * r;
        if (weight) v *= weight[j];
        if (bias) v += bias[j];
        yi[j] = T(v);
      }
    }
  });
}

namespace detail {

// Rows per chunk of the backward's parameter gradients: each chunk sums its rows in order into a
// partial row of its own, and the chunks' partials are added in chunk order, so the result does
// not depend on the thread count (ATen keeps one buffer per thread instead).
constexpr int64_t kNormGradChunk = 64;

// row_fn(i, dweight_acc, dbias_acc, scratch) for every row i, the accumulators a chunk's partial
// rows (nullptr where that gradient is not wanted), scratch `scratch_floats` floats of the calling
// task's own; then dweight and dbias from the partials.
template <class A, class RowFn>
void norm_backward_rows(A* dweight, A* dbias, int64_t M, int64_t N, int64_t scratch_floats, const RowFn& row_fn) {
  const int64_t chunks = (M + kNormGradChunk - 1) / kNormGradChunk;
  const bool params = dweight != nullptr || dbias != nullptr;
  std::vector<A> partial(params ? static_cast<size_t>(chunks * 2 * N) : 0, A(0));
  const int64_t grain = std::max<int64_t>(1, rows_grain(N) / kNormGradChunk);
  parallel_for(0, chunks, grain, [&](int64_t cb, int64_t ce) {
    std::vector<float> storage;
    float* scratch = aligned_floats(storage, scratch_floats);
    for (int64_t c = cb; c < ce; ++c) {
      A* dw = dweight ? partial.data() + c * 2 * N : nullptr;
      A* db = dbias ? partial.data() + c * 2 * N + N : nullptr;
      for (int64_t i = c * kNormGradChunk; i < std::min(M, (c + 1) * kNormGradChunk); ++i)
        row_fn(i, dw, db, scratch);
    }
  });
  using Array = Eigen::Array<A, Eigen::Dynamic, 1>;
  if (dweight) Eigen::Map<Array>(dweight, N).setZero();
  if (dbias) Eigen::Map<Array>(dbias, N).setZero();
  for (int64_t c = 0; c < chunks && params; ++c) {
    if (dweight) Eigen::Map<Array>(dweight, N) += rows::Row<A>(partial.data() + c * 2 * N, N);
    if (dbias) Eigen::Map<Array>(dbias, N) += rows::Row<A>(partial.data() + c * 2 * N + N, N);
  }
}

#if defined(__AVX512F__)
// layer_norm_backward_row for float or bfloat16 rows (widened in registers, dx rounded once) in two
// passes over the row, 16 lanes at a time: the first sums dy * weight and dy * weight * xhat and
// adds into dw_acc and db_acc, the second writes dx (xhat recomputed); a row's tail runs the same
// code on zero-filled lanes. The Eigen form below makes six passes: `bench:ops` layer_norm fwd+bwd
// f32 [1024, 1024], Xeon with AMX, in turn: 1 thread 0.96-0.97 -> 0.77-0.79 ms, 2 threads 0.50-0.51
// -> 0.40-0.44 (PyTorch 0.98-1.18 and 0.63-0.88). The sums run in another order than Eigen's, so
// dx's last bits may differ from the Eigen form's. bfloat16 rows widened into buffers first took
// 1.16x float's time there while moving half the bytes.
template <class T>
void layer_norm_backward_row_avx512(T* dx, float* dw_acc, float* db_acc, const T* dy, const T* x, float mu, float r,
                                    const float* weight, int64_t N) {
  const __m512 muv = _mm512_set1_ps(mu), rv = _mm512_set1_ps(r);
  __m512 sum_g = _mm512_setzero_ps(), sum_gx = _mm512_setzero_ps();
  // columns [j, j + 16) under mask m, g and the row's x already loaded (0 in masked-off lanes)
  auto sums = [&](int64_t j, __mmask16 m, __m512 g, __m512 xv) {
    const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(xv, muv), rv);
    if (dw_acc) _mm512_mask_storeu_ps(dw_acc + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, dw_acc + j), _mm512_mul_ps(g, xhat)));
    if (db_acc) _mm512_mask_storeu_ps(db_acc + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, db_acc + j), g));
    const __m512 gw = weight ? _mm512_mul_ps(g, _mm512_maskz_loadu_ps(m, weight + j)) : g;
    sum_g = _mm512_add_ps(sum_g, gw);  // masked-off lanes hold 0
    sum_gx = _mm512_add_ps(sum_gx, _mm512_mul_ps(gw, xhat));
  };
  const int64_t full = N / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (N - full)) - 1);
  for (int64_t j = 0; j < full; j += 16) {
    prefetch_ahead(dy + j);  // into the next rows: x is a saved activation, out of cache in a step
    prefetch_ahead(x + j);
    sums(j, 0xFFFF, load16_as_float(dy + j), load16_as_float(x + j));
  }
  if (full < N) sums(full, tail, load_tail_as_float(dy, full, N, 0.0f), load_tail_as_float(x, full, N, 0.0f));
  const __m512 mean_g = _mm512_set1_ps(_mm512_reduce_add_ps(sum_g) / static_cast<float>(N));
  const __m512 mean_gx = _mm512_set1_ps(_mm512_reduce_add_ps(sum_gx) / static_cast<float>(N));
  auto grad = [&](int64_t j, __mmask16 m, __m512 g, __m512 xv) {
    const __m512 xhat = _mm512_mul_ps(_mm512_sub_ps(xv, muv), rv);
    const __m512 gw = weight ? _mm512_mul_ps(g, _mm512_maskz_loadu_ps(m, weight + j)) : g;
    return _mm512_mul_ps(rv, _mm512_sub_ps(_mm512_sub_ps(gw, mean_g), _mm512_mul_ps(xhat, mean_gx)));
  };
  int64_t j = 0;
  for (; j + 32 <= full; j += 32)  // two vectors a store (store32_from_float: one bfloat16 check)
    store32_from_float(dx + j, grad(j, 0xFFFF, load16_as_float(dy + j), load16_as_float(x + j)),
                       grad(j + 16, 0xFFFF, load16_as_float(dy + j + 16), load16_as_float(x + j + 16)));
  for (; j < full; j += 16)
    store16_from_float(dx + j, grad(j, 0xFFFF, load16_as_float(dy + j), load16_as_float(x + j)));
  if (full < N)
    store_tail_from_float(dx, full, N,
                          grad(full, tail, load_tail_as_float(dy, full, N, 0.0f), load_tail_as_float(x, full, N, 0.0f)));
}
#endif

// One row of layer_norm's backward in float or double (below): dx, with dy * xhat added into
// dw_acc and dy into db_acc (each nullptr: not wanted), while the row is in L1.
template <class A>
void layer_norm_backward_row(A* dx, A* dw_acc, A* db_acc, const A* dy, const A* x, A mu, A r, const A* weight,
                             int64_t N) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<A, float>) {
    layer_norm_backward_row_avx512(dx, dw_acc, db_acc, dy, x, mu, r, weight, N);
    return;
  }
#endif
  using Array = Eigen::Array<A, Eigen::Dynamic, 1>;
  rows::Row<A> xa(x, N), ga(dy, N);
  Eigen::Map<Array> dxa(dx, N);
  dxa = (xa - mu) * r;  // xhat, kept in dx until the last line
  if (dw_acc) Eigen::Map<Array>(dw_acc, N) += ga * dxa;
  if (db_acc) Eigen::Map<Array>(db_acc, N) += ga;
  A sum_g, sum_gx;
  if (weight) {
    rows::Row<A> wa(weight, N);
    sum_g = (ga * wa).sum();
    sum_gx = (ga * wa * dxa).sum();
    dxa = r * ((ga * wa - sum_g / A(N)) - dxa * (sum_gx / A(N)));
  } else {
    sum_g = ga.sum();
    sum_gx = (ga * dxa).sum();
    dxa = r * ((ga - sum_g / A(N)) - dxa * (sum_gx / A(N)));
  }
}

}  // namespace detail

// forward (above): xhat = (x - mean) * rstd;  y = xhat * weight + bias
// backward: dxhat = dy * weight
//           dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
//           dweight = sum over rows of dy * xhat;  dbias = sum over rows of dy
// One pass over dy and x: the parameter gradients are summed while each row is in L1.
template <class T, class A = acc_t<T>>
void layer_norm_backward(T* dx, A* dweight, A* dbias, const T* dy, const T* x, const A* mean, const A* rstd,
                         const A* weight, int64_t M, int64_t N) {
  if constexpr (kFloatBlocks<T>) {  // each row widened to float, run by the float row, rounded once
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<T, BFloat16>) {  // widened in registers
      detail::norm_backward_rows<A>(dweight, dbias, M, N, 0, [&](int64_t i, A* dw, A* db, float*) {
        detail::layer_norm_backward_row_avx512(dx + i * N, dw, db, dy + i * N, x + i * N, mean[i], rstd[i], weight, N);
      });
      return;
    }
#endif
    const int64_t row = aligned_row_floats(N);  // each widened row 64-byte aligned
    detail::norm_backward_rows<A>(dweight, dbias, M, N, 3 * row, [&](int64_t i, A* dw, A* db, float* buf) {
      bf16_to_float(dy + i * N, buf, N);
      bf16_to_float(x + i * N, buf + row, N);
      detail::layer_norm_backward_row<float>(buf + 2 * row, dw, db, buf, buf + row, mean[i], rstd[i], weight, N);
      float_to_bf16(buf + 2 * row, dx + i * N, N);
    });
    return;
  } else if constexpr (kEigenVectorizable<T> && std::is_same_v<T, A>) {
    detail::norm_backward_rows<A>(dweight, dbias, M, N, 0, [&](int64_t i, A* dw, A* db, float*) {
      detail::layer_norm_backward_row<A>(dx + i * N, dw, db, dy + i * N, x + i * N, mean[i], rstd[i], weight, N);
    });
    return;
  }
  parallel_for(0, M, rows_grain(N), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* xi = x + i * N;
      const T* gi = dy + i * N;
      T* dxi = dx + i * N;
      const A mu = mean[i], r = rstd[i];
      A sum_g = 0, sum_gx = 0;
      for (int64_t j = 0; j < N; ++j) {
        A gh = weight ? A(gi[j]) * weight[j] : A(gi[j]);
        sum_g += gh;
        sum_gx += gh * (A(xi[j]) - mu) * r;
      }
      const A mean_g = sum_g / A(N), mean_gx = sum_gx / A(N);
      for (int64_t j = 0; j < N; ++j) {
        A gh = weight ? A(gi[j]) * weight[j] : A(gi[j]);
        A xhat = (A(xi[j]) - mu) * r;
        dxi[j] = T(r * (gh - mean_g - xhat * mean_gx));
      }
    }
  });
  detail::norm_param_grads(dweight, dbias, dy, M, N,
                           [&](int64_t i, int64_t j) { return (A(x[i * N + j]) - mean[i]) * rstd[i]; });
}

// forward: rstd = 1 / sqrt(sum(x^2) / N + eps);  y = x * rstd * weight
template <class T, class A = acc_t<T>>
void rms_norm_forward(T* y, A* rstd, const T* x, const A* weight, int64_t M, int64_t N, double eps) {
  parallel_for(0, M, rows_grain(N), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* xi = x + i * N;
      T* yi = y + i * N;
      A sq = 0;
      for (int64_t j = 0; j < N; ++j) sq += A(xi[j]) * A(xi[j]);
      const A r = A(1) / std::sqrt(sq / A(N) + A(eps));
      rstd[i] = r;
      for (int64_t j = 0; j < N; ++j) yi[j] = T(weight ? A(xi[j]) * r * weight[j] : A(xi[j]) * r);
    }
  });
}

// forward (above): xhat = x * rstd;  y = xhat * weight
// backward: dxhat = dy * weight
//           dx = rstd * (dxhat - xhat * mean(dxhat * xhat))
//           dweight = sum over rows of dy * xhat
template <class T, class A = acc_t<T>>
void rms_norm_backward(T* dx, A* dweight, const T* dy, const T* x, const A* rstd, const A* weight, int64_t M,
                       int64_t N) {
  parallel_for(0, M, rows_grain(N), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* xi = x + i * N;
      const T* gi = dy + i * N;
      T* dxi = dx + i * N;
      const A r = rstd[i];
      A sum_gx = 0;
      for (int64_t j = 0; j < N; ++j) {
        A gh = weight ? A(gi[j]) * weight[j] : A(gi[j]);
        sum_gx += gh * A(xi[j]) * r;
      }
      const A mean_gx = sum_gx / A(N);
      for (int64_t j = 0; j < N; ++j) {
        A gh = weight ? A(gi[j]) * weight[j] : A(gi[j]);
        dxi[j] = T(r * (gh - A(xi[j]) * r * mean_gx));
      }
    }
  });
  detail::norm_param_grads(dweight, static_cast<A*>(nullptr), dy, M, N,
                           [&](int64_t i, int64_t j) { return A(x[i * N + j]) * rstd[i]; });
}

}  // namespace remat::kernels::cpu
