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

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/pointwise.h"
#include "kernels/cpu/vectorized_rows.h"

namespace remat::kernels::cpu {

namespace detail {
inline int64_t norm_rows_grain(int64_t n) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1)); }

// dweight[j] = sum_i dy[i, j] * xhat[i, j], dbias[j] = sum_i dy[i, j]. Parallel over blocks of
// columns; each column sums its rows in order, so the result does not depend on the thread count.
template <class T, class A, class Xhat>
void norm_param_grads(A* dweight, A* dbias, const T* dy, int64_t M, int64_t N, const Xhat& xhat) {
  if (dweight == nullptr && dbias == nullptr) return;
  parallel_for(0, N, norm_rows_grain(M), [&](int64_t j0, int64_t j1) {
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

// forward: mean = sum(x) / N;  rstd = 1 / sqrt(sum((x - mean)^2) / N + eps)
//          y = (x - mean) * rstd * weight + bias
template <class T, class A = acc_t<T>>
void layer_norm_forward(T* y, A* mean, A* rstd, const T* x, const A* weight, const A* bias, int64_t M, int64_t N,
                        double eps) {
  if constexpr (kFloatBlocks<T>) {  // each row widened to float, run by the float kernel, rounded once
    parallel_for(0, M, detail::norm_rows_grain(N), [&](int64_t b, int64_t e) {
      bf16_rows<1>(y, {x}, b, e, N, [&](int64_t i, float* yi, const std::array<const float*, 1>& xi) {
        layer_norm_forward<float>(yi, mean + i, rstd + i, xi[0], weight, bias, int64_t{1}, N, eps);
      });
    });
    return;
  }
  parallel_for(0, M, detail::norm_rows_grain(N), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* xi = x + i * N;
      T* yi = y + i * N;
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

// forward (above): xhat = (x - mean) * rstd;  y = xhat * weight + bias
// backward: dxhat = dy * weight
//           dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))
//           dweight = sum over rows of dy * xhat;  dbias = sum over rows of dy
template <class T, class A = acc_t<T>>
void layer_norm_backward(T* dx, A* dweight, A* dbias, const T* dy, const T* x, const A* mean, const A* rstd,
                         const A* weight, int64_t M, int64_t N) {
  if constexpr (kFloatBlocks<T>) {
    parallel_for(0, M, detail::norm_rows_grain(N), [&](int64_t b, int64_t e) {
      bf16_rows<2>(dx, {dy, x}, b, e, N, [&](int64_t i, float* dxi, const std::array<const float*, 2>& in) {
        layer_norm_backward<float>(dxi, static_cast<float*>(nullptr), static_cast<float*>(nullptr), in[0], in[1], mean + i,
                                   rstd + i, weight, int64_t{1}, N);
      });
    });
    detail::norm_param_grads(dweight, dbias, dy, M, N,
                             [&](int64_t i, int64_t j) { return (A(x[i * N + j]) - mean[i]) * rstd[i]; });
    return;
  }
  parallel_for(0, M, detail::norm_rows_grain(N), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T* xi = x + i * N;
      const T* gi = dy + i * N;
      T* dxi = dx + i * N;
      const A mu = mean[i], r = rstd[i];
      if constexpr (kEigenVectorizable<T> && std::is_same_v<T, A>) {
        using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
        rows::Row<T> xa(xi, N), ga(gi, N);
        Eigen::Map<Array> dxa(dxi, N);
        dxa = (xa - mu) * r;  // xhat, kept in dx until the last line
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
        continue;
      }
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
  parallel_for(0, M, detail::norm_rows_grain(N), [&](int64_t b, int64_t e) {
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
  parallel_for(0, M, detail::norm_rows_grain(N), [&](int64_t b, int64_t e) {
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
