// Mirrors ATen/native/LossNLL.cpp + SoftMax.cpp as one fused kernel pair (cross_entropy on class
// indices, mean reduction): the forward keeps one log-sum-exp per row, never the softmax; the
// backward recomputes the softmax from the logits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/pointwise.h"
#include "kernels/cpu/vectorized_rows.h"

namespace remat::kernels::cpu {

namespace detail {
// max and log(sum(exp(x - max))) of one row, in A.
template <class T, class A>
void row_logsumexp(const T* x, int64_t C, A* max_out, A* log_sum_out) {
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
  parallel_for(0, N, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(C, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* x = logits + i * C;
      A max, log_sum;
      detail::row_logsumexp<T, A>(x, C, &max, &log_sum);
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
  if constexpr (kFloatBlocks<T>) {  // each row widened to float, run by the float kernel, rounded once
    parallel_for(0, N, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(C, 1)), [&](int64_t b, int64_t e) {
      bf16_rows<1>(dlogits, {logits}, b, e, C, [&](int64_t i, float* dx, const std::array<const float*, 1>& x) {
        // one row of the float kernel, its 1/N the whole batch's
        cross_entropy_backward<float>(dx, x[0], targets + i, grad_loss / static_cast<double>(N), 1, C);
      });
    });
    return;
  }
  const A scale = A(grad_loss / static_cast<double>(N));
  parallel_for(0, N, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(C, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* x = logits + i * C;
      T* dx = dlogits + i * C;
      A max, log_sum;
      detail::row_logsumexp<T, A>(x, C, &max, &log_sum);
      if constexpr (kEigenVectorizable<T>) {
        // dx = softmax * scale, then the target's entry less scale
        Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(dx, C) = ((rows::Row<T>(x, C) - max) - log_sum).exp() * scale;
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
