// Mirrors ATen/native/LossNLL.cpp + SoftMax.cpp as one fused kernel pair (cross_entropy on class
// indices, mean reduction): the forward keeps one log-sum-exp per row, never the softmax; the
// backward recomputes the softmax from the logits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/bfloat16_convert.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/pointwise.h"
#include "kernels/cpu/vec_exp.h"
#include "kernels/cpu/vectorized_rows.h"
#include "kernels/cpu/x86_intrinsics.h"

namespace remat::kernels::cpu {

namespace detail {

#if defined(__AVX512F__)
// One row's max and log(sum(exp(x - max))) for float and bfloat16 rows, widened in registers,
// 16 lanes at a time (exp16, vec_exp.h; four running sums), a tail on masked lanes. Through
// Eigen's max and exp (bfloat16: over widened blocks) cross_entropy at the GPT's logits
// [1024, 4096] ran bfloat16 slower than float (Xeon, 1 thread: fwd 2.64 against 1.92 ms, 20% of
// copy). `next`: the row after this one (or null), asked for a line at a time while this row's
// exponentials run from L1, so that its max pass does not wait on memory.
template <class T>
void row_logsumexp_avx512(const T* x, int64_t C, float* max_out, float* log_sum_out, const T* next) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const int64_t full = C / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (C - full)) - 1);
  __m512 mx[2] = {_mm512_set1_ps(kNegInf), _mm512_set1_ps(kNegInf)};
  int64_t j = 0;
  for (; j + 32 <= full; j += 32)
    for (int u = 0; u < 2; ++u) mx[u] = _mm512_max_ps(mx[u], load16_as_float(x + j + 16 * u));
  for (; j < full; j += 16) mx[0] = _mm512_max_ps(mx[0], load16_as_float(x + j));
  if (full < C) mx[1] = _mm512_max_ps(mx[1], load_tail_as_float(x, full, C, kNegInf));
  // a NaN reaches the sum below (exp(NaN - max)), so the row's loss is NaN, as PyTorch's
  const float max = _mm512_reduce_max_ps(_mm512_max_ps(mx[0], mx[1]));
  const __m512 shift = _mm512_set1_ps(max);
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  for (j = 0; j + 64 <= full; j += 64) {
    if (next != nullptr)
      for (int64_t line = 0; line < 64 * static_cast<int64_t>(sizeof(T)); line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(next + j) + line, _MM_HINT_T0);
    for (int u = 0; u < 4; ++u)
      acc[u] = _mm512_add_ps(acc[u], exp16(_mm512_sub_ps(load16_as_float(x + j + 16 * u), shift)));
  }
  for (; j < full; j += 16) acc[0] = _mm512_add_ps(acc[0], exp16(_mm512_sub_ps(load16_as_float(x + j), shift)));
  if (full < C)
    acc[1] = _mm512_add_ps(acc[1],
                           _mm512_maskz_mov_ps(tail, exp16(_mm512_sub_ps(load_tail_as_float(x, full, C, 0.0f), shift))));
  *max_out = max;
  *log_sum_out = std::log(_mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]))));
}

// One row of the backward: dx[c] = exp((x[c] - max) - log_sum) * scale, less scale at the target
// (its probability from the same exp16 lane as the others'), rounded once.
template <class T>
void cross_entropy_backward_row_avx512(T* dx, const T* x, int64_t target, float scale, int64_t C, const T* next) {
  float max, log_sum;
  row_logsumexp_avx512(x, C, &max, &log_sum, next);
  const __m512 maxv = _mm512_set1_ps(max), lsv = _mm512_set1_ps(log_sum), sv = _mm512_set1_ps(scale);
  auto grad = [&](int64_t j, __m512 v) {
    const __m512 p = exp16(_mm512_sub_ps(_mm512_sub_ps(v, maxv), lsv));
    const int64_t at = target - j;  // the target's lane, if among these 16: p - 1 there
    const __mmask16 one = at >= 0 && at < 16 ? static_cast<__mmask16>(1u << at) : __mmask16(0);
    return _mm512_mul_ps(_mm512_mask_sub_ps(p, one, p, _mm512_set1_ps(1.0f)), sv);
  };
  const int64_t full = C / 16 * 16;
  int64_t j = 0;
  for (; j + 32 <= full; j += 32)  // two vectors a store (store32_from_float: one bfloat16 check)
    store32_from_float(dx + j, grad(j, load16_as_float(x + j)), grad(j + 16, load16_as_float(x + j + 16)));
  for (; j < full; j += 16) store16_from_float(dx + j, grad(j, load16_as_float(x + j)));
  if (full < C) store_tail_from_float(dx, full, C, grad(full, load_tail_as_float(x, full, C, 0.0f)));
}
#endif

// max and log(sum(exp(x - max))) of one row, in A; `next`: the row after it, or null.
template <class T, class A>
void row_logsumexp(const T* x, int64_t C, A* max_out, A* log_sum_out, const T* next) {
#if defined(__AVX512F__)
  if constexpr ((std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) && std::is_same_v<A, float>) {
    row_logsumexp_avx512(x, C, max_out, log_sum_out, next);
    return;
  }
#endif
  (void)next;
  const A max = rows::max(x, C);
  *max_out = max;
  *log_sum_out = std::log(rows::sum_exp(x, C, max));
}
}  // namespace detail

// forward: loss = (1/N) sum_i (logsumexp(x[i, :]) - x[i, t_i])   (logits [N, C], targets in [0, C))
// Row losses are summed in row order in double, so the result does not depend on threads.
template <class T, class A = acc_t<T>>
double cross_entropy_forward(const T* logits, const int64_t* targets, int64_t N, int64_t C) {
  std::vector<A> row_loss(static_cast<size_t>(N));
  parallel_for(0, N, rows_grain(C), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* x = logits + i * C;
      A max, log_sum;
      detail::row_logsumexp<T, A>(x, C, &max, &log_sum, i + 1 < e ? x + C : nullptr);
      row_loss[static_cast<size_t>(i)] = (max - A(x[targets[i]])) + log_sum;
    }
  });
  double total = 0;
  for (A l : row_loss) total += static_cast<double>(l);
  return total / static_cast<double>(N);  // N == 0: NaN, as PyTorch's mean over no rows
}

// forward (above): loss = mean_i (logsumexp(x[i, :]) - x[i, t_i])
// backward: dx[i, c] = (softmax(x[i, :])[c] - [c == t_i]) * dloss / N
template <class T, class A = acc_t<T>>
void cross_entropy_backward(T* dlogits, const T* logits, const int64_t* targets, double grad_loss, int64_t N,
                            int64_t C) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
    const float scale = static_cast<float>(grad_loss / static_cast<double>(N));
    parallel_for(0, N, rows_grain(C), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        detail::cross_entropy_backward_row_avx512(dlogits + i * C, logits + i * C, targets[i], scale, C,
                                                  i + 1 < e ? logits + (i + 1) * C : nullptr);
    });
    return;
  }
#endif
  if constexpr (kFloatBlocks<T>) {  // each row widened to float, run by the float kernel, rounded once
    parallel_for(0, N, rows_grain(C), [&](int64_t b, int64_t e) {
      bf16_rows<1>(dlogits, {logits}, b, e, C, [&](int64_t i, float* dx, const std::array<const float*, 1>& x) {
        // one row of the float kernel, its 1/N the whole batch's
        cross_entropy_backward<float>(dx, x[0], targets + i, grad_loss / static_cast<double>(N), 1, C);
      });
    });
    return;
  }
  const A scale = A(grad_loss / static_cast<double>(N));
  parallel_for(0, N, rows_grain(C), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* x = logits + i * C;
      T* dx = dlogits + i * C;
      A max, log_sum;
      detail::row_logsumexp<T, A>(x, C, &max, &log_sum, static_cast<const T*>(nullptr));
      if constexpr (kEigenVectorizable<T>) {
        // dx = softmax * scale, then the target's entry less scale
        Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(dx, C) =
            kernel_exp((rows::Row<T>(x, C) - max) - log_sum) * scale;
        dx[targets[i]] = T((std::exp((A(x[targets[i]]) - max) - log_sum) - A(1)) * scale);
      } else {
        for (int64_t c = 0; c < C; ++c) {
          A p = std::exp((A(x[c]) - max) - log_sum);
          dx[c] = T((c == targets[i] ? p - A(1) : p) * scale);
        }
      }
    }
  });
}

}  // namespace remat::kernels::cpu
