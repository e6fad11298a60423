// Mirrors ATen/native/cpu/Activation.cpp (GeluKernelImpl, GeluBackwardKernelImpl,
// silu_backward_kernel): GELU forward and backward and SiLU's backward over contiguous
// float/double runs, vectorized with Eigen's packet erf/exp/logistic and, with AVX-512, remat's exp16
// (GELU's tanh form and its backward, both through exp(-2u): no tanh); bfloat16 runs the float code
// in registers (AVX-512) or on widened blocks (kernels/cpu/bfloat16_blocks.h).
//
// Why a kernel of its own: through std::tanh/std::erf one element at a time, GELU cost a quarter
// of a GPT training step (more than all matmuls but one); Eigen's packet math does 16 floats at a
// time with max errors of a few ulp.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/cpu/bfloat16_blocks.h"
#include "kernels/cpu/eigen.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/vec_exp.h"
#include "kernels/cpu/x86_intrinsics.h"
#include "kernels/gelu_constants.h"

namespace remat::kernels::cpu {

namespace gelu_constants = kernels::gelu_constants;  // kernels/gelu_constants.h

#if defined(__AVX512F__)
#define REMAT_GELU_TANH_AVX512 1
// gelu_run's tanh form (below) for 16 floats in registers, as a sigmoid: 0.5 (1 + tanh(u)) =
// 1 / (1 + E) with E = exp(-2u), so y = x / (1 + E), -2u = x (-2 beta - 2 beta kappa x^2) (one FMA
// and two products; exp16, kernels/cpu/vec_exp.h). Against 0.5 x (1 + tanh(u)) through Eigen's
// packet tanh (a rational function): 0.31 against 0.46 ns an element in L1 (1 thread, AMD Zen 4), and
// no cancellation where tanh saturates: for x < -3, 1 + tanh(u) from a rounded tanh kept few digits
// (relative error 2.8e-4 at x near -6; PyTorch's gelu(-5.0) is -2.98e-07 for -2.33e-07). Past x of
// about -10, E overflows to inf and y is -0 (x = -inf: NaN), as PyTorch's formula gives there.
inline __m512 gelu_tanh16(__m512 x) {
  using namespace gelu_constants;
  const __m512 minus_2u = _mm512_mul_ps(x, _mm512_fmadd_ps(_mm512_set1_ps(float(kMinus2BetaKappa)), _mm512_mul_ps(x, x),
                                                            _mm512_set1_ps(float(kMinus2Beta))));
  return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), exp16(minus_2u)));
}

// gelu_run's erf form (below) likewise: the Eigen expression's operations in its order (Eigen's
// packet erf), so the same bits.
inline __m512 gelu_erf16(__m512 x) {
  using namespace gelu_constants;
  const __m512 e = Eigen::internal::perf(_mm512_mul_ps(x, _mm512_set1_ps(float(kSqrt1_2))));
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x), _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

// out = gelu(x) by Gelu16 (gelu_tanh16 or gelu_erf16), on the calling thread, T float or BFloat16
// (widened in registers, rounded once). Why not Eigen's expression over bfloat16 blocks widened
// into buffers: the two extra passes made bf16 slower than f32 (tanh form: 0.56 against 0.49 ms at
// the GPT's MLP shape, 1 thread, Xeon with AMX; erf form: 6.03 against 4.84 ms at [4096, 4096],
// Xeon model 207), and sac-mm recomputes this op in every backward. x is prefetched ahead
// (prefetch.h): in a bf16 step it came from memory, 0.86-0.92 -> 0.49-0.50 ms a call (tanh form,
// 1 thread; f32 unchanged).
template <__m512 (*Gelu16)(__m512), class T>
void gelu_avx512(T* out, const T* x, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {  // two vectors at once: tanh's and erf's chains are long
    prefetch_ahead(x + i);
    const __m512 a = Gelu16(load16_as_float(x + i)), b = Gelu16(load16_as_float(x + i + 16));
    store32_from_float(out + i, a, b);
  }
  for (; i + 16 <= n; i += 16) store16_from_float(out + i, Gelu16(load16_as_float(x + i)));
  if (i < n) store_tail_from_float(out, i, n, Gelu16(load_tail_as_float(x, i, n, 0.0f)));
}
template <class T>
void gelu_tanh_avx512(T* out, const T* x, int64_t n) {
  gelu_avx512<gelu_tanh16>(out, x, n);
}
#endif

// out[i] = gelu(x[i]) for i < n, on the calling thread; tanh_form selects approximate="tanh",
// else the exact erf form.
template <class T>
void gelu_run(T* out, const T* x, int64_t n, bool tanh_form) {
  using namespace gelu_constants;
#ifdef REMAT_GELU_TANH_AVX512
  if constexpr (std::is_same_v<T, float>) {
    if (tanh_form) return gelu_tanh_avx512(out, x, n);
  }
#endif
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  Eigen::Map<const Array> xa(x, n);
  Eigen::Map<Array> y(out, n);
  if (tanh_form) {
    // y = 0.5 x (1 + tanh(u)), u = beta (x + kappa x^3), written as x / (1 + exp(-2u)) (see
    // gelu_tanh16): no cancellation where tanh saturates.
    y = xa / (T(1) + kernel_exp(xa * (T(kMinus2BetaKappa) * xa * xa + T(kMinus2Beta))));
  } else {
    // y = 0.5 x (1 + erf(x / sqrt 2))
    y = T(0.5) * xa * (T(1) + (xa * T(kSqrt1_2)).erf());
  }
}

// gelu_run over the threads (T: float, double or BFloat16).
template <class T>
void gelu_contiguous(T* out, const T* x, int64_t n, bool tanh_form) {
  if constexpr (std::is_same_v<T, BFloat16>) {
#ifdef REMAT_GELU_TANH_AVX512
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
      if (tanh_form) gelu_tanh_avx512(out + b, x + b, e - b);
      else gelu_avx512<gelu_erf16>(out + b, x + b, e - b);
    });
    return;
#endif
    map_bf16_blocks<1>(out, {x}, n, [tanh_form](float* o, const float* const* in, int64_t len) {
      gelu_run<float>(o, in[0], len, tanh_form);
    });
  } else {
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) { gelu_run(out + b, x + b, e - b, tanh_form); });
  }
}

#if defined(__AVX512F__)
// gelu_backward_run's tanh form (below) for 16 floats in registers, with its constants folded:
// -2u = x (-2 beta - 2 beta kappa x^2) and 2 slope = 2 beta + 6 beta kappa x^2, each one FMA and a
// product (exp16, kernels/cpu/vec_exp.h; with Eigen's packet exp bench:ops' [8, 128, 1024] row took
// 0.44-0.48 ms, now 0.43, f32, 1 thread, Xeon with AMX). 12 vector operations besides exp and the
// division where the formula as written takes 19: 0.63 -> 0.56 ms for 2^20 floats (1 thread, Xeon
// with AMX). Through the four Eigen passes over a block the f32 kernel ran at 28% of exp's own
// throughput (bench:ops, AMD Zen 4, 2 threads).
inline __m512 gelu_tanh_backward16(__m512 g, __m512 x) {
  using namespace gelu_constants;
  const __m512 x2 = _mm512_mul_ps(x, x);
  const __m512 minus_2u = _mm512_mul_ps(
      x, _mm512_fmadd_ps(_mm512_set1_ps(float(kMinus2BetaKappa)), x2, _mm512_set1_ps(float(kMinus2Beta))));
  const float cap = std::log(std::numeric_limits<float>::max()) - 1.0f;
  const __m512 e = exp16(_mm512_min_ps(_mm512_set1_ps(cap), minus_2u));
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 r = _mm512_div_ps(one, _mm512_add_ps(one, e));
  const __m512 slope2 =
      _mm512_fmadd_ps(_mm512_set1_ps(float(k6BetaKappa)), x2, _mm512_set1_ps(float(k2Beta)));
  // gelu' = r + 2 slope x (E r) r: E r, not 1 - r, keeps the second term's digits where r -> 1
  const __m512 e_r_r = _mm512_mul_ps(_mm512_mul_ps(e, r), r);
  return _mm512_mul_ps(g, _mm512_fmadd_ps(_mm512_mul_ps(x, slope2), e_r_r, r));
}

// grad_in = grad_out * gelu'(x), tanh form, on the calling thread, T float or BFloat16 (widened in
// registers, rounded once); the tail runs the same code, so every element gets the same bits
// wherever it falls. bfloat16 through widened blocks in buffers took 1.2x float's time (0.745
// against 0.623 ms at the GPT's MLP shape, 1 thread, Xeon with AMX) while moving half the bytes.
//
// Both inputs are prefetched ahead (kernels/cpu/prefetch.h): in a training step x is a saved
// activation long out of cache, and the arithmetic leaves the hardware prefetcher behind.
template <class T>
void gelu_tanh_backward_avx512(T* grad_in, const T* grad_out, const T* x, int64_t n) {
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {  // two vectors a store (store32_from_float: one bfloat16 check)
    prefetch_ahead(grad_out + i);
    prefetch_ahead(x + i);
    store32_from_float(grad_in + i, gelu_tanh_backward16(load16_as_float(grad_out + i), load16_as_float(x + i)),
                       gelu_tanh_backward16(load16_as_float(grad_out + i + 16), load16_as_float(x + i + 16)));
  }
  for (; i + 16 <= n; i += 16)
    store16_from_float(grad_in + i, gelu_tanh_backward16(load16_as_float(grad_out + i), load16_as_float(x + i)));
  if (i < n)
    store_tail_from_float(grad_in, i, n,
                          gelu_tanh_backward16(load_tail_as_float(grad_out, i, n, 0.0f), load_tail_as_float(x, i, n, 0.0f)));
}
#endif

// grad_in[i] = grad_out[i] * gelu'(x[i]) for i < n, on the calling thread.
template <class T>
void gelu_backward_run(T* grad_in, const T* grad_out, const T* x, int64_t n, bool tanh_form) {
  using namespace gelu_constants;
#ifdef REMAT_GELU_TANH_AVX512
  if constexpr (std::is_same_v<T, float>) {
    if (tanh_form) return gelu_tanh_backward_avx512(grad_in, grad_out, x, n);
  }
#endif
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  constexpr int64_t kBlock = 1024;  // the temporaries of one block stay in L1
  Eigen::Array<T, kBlock, 1> u, r, ex;
  for (int64_t lo = 0; lo < n; lo += kBlock) {
    const int64_t len = n - lo < kBlock ? n - lo : kBlock;
    Eigen::Map<const Array> xa(x + lo, len), g(grad_out + lo, len);
    Eigen::Map<Array> gi(grad_in + lo, len);
    auto ub = u.head(len);
    auto rb = r.head(len);
    auto eb = ex.head(len);
    if (tanh_form) {
      // forward: y = 0.5 x (1 + t), t = tanh(u), u = beta (x + kappa x^3)
      // dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) beta (1 + 3 kappa x^2)
      // Both terms from one exp, E = exp(-2u), and r = 1/(1+E): 0.5 (1 + t) = r (a sigmoid) and
      // 1 - t^2 = 4 E r^2. No tanh, and no cancellation where tanh saturates (|x| > 3), which
      // 1 + t and 1 - t^2 from a rounded t would suffer. -2u is capped a little below the log of
      // T's largest value so that E stays finite (beyond it r is below T's smallest normal).
      // The constants folded as in gelu_tanh_backward16: -2u = x (-2 beta - 2 beta kappa x^2).
      // kernel_exp(-inf) is 0 (eigen.h; Eigen's own double exp gave 5.6e-309): at x = +inf the
      // product inf * E is then NaN, PyTorch's value there.
      const T cap = std::log(std::numeric_limits<T>::max()) - T(1);
      ub = xa * xa;  // x^2
      eb = kernel_exp((xa * (T(kMinus2BetaKappa) * ub + T(kMinus2Beta))).min(cap));
      rb = T(1) / (T(1) + eb);
      gi = g * (xa * (T(k6BetaKappa) * ub + T(k2Beta)) * (eb * rb * rb) + rb);
    } else {
      // forward: y = x Phi(x); dy/dx = Phi(x) + x phi(x)
      gi = g * (T(0.5) * (T(1) + (xa * T(kSqrt1_2)).erf()) + xa * kernel_exp(T(-0.5) * xa * xa) * T(kInvSqrt2Pi));
    }
  }
}

// gelu_backward_run over the threads (T: float, double or BFloat16).
template <class T>
void gelu_backward_contiguous(T* grad_in, const T* grad_out, const T* x, int64_t n, bool tanh_form) {
  if constexpr (std::is_same_v<T, BFloat16>) {
#ifdef REMAT_GELU_TANH_AVX512
    if (tanh_form) {
      parallel_for(0, n, kGrainSize,
                   [&](int64_t b, int64_t e) { gelu_tanh_backward_avx512(grad_in + b, grad_out + b, x + b, e - b); });
      return;
    }
#endif
    map_bf16_blocks<2>(grad_in, {grad_out, x}, n, [tanh_form](float* o, const float* const* in, int64_t len) {
      gelu_backward_run<float>(o, in[0], in[1], len, tanh_form);
    });
  } else {
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
      gelu_backward_run(grad_in + b, grad_out + b, x + b, e - b, tanh_form);
    });
  }
}

#if defined(__AVX512F__)
// silu_backward_run's formula for 16 floats in registers, s = 1 / (1 + exp16(-x)): one pass where
// Eigen's expressions made two over a block (the sigmoid into a buffer, then the product).
inline __m512 silu_backward16(__m512 g, __m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 s = _mm512_div_ps(one, _mm512_add_ps(one, exp16(_mm512_sub_ps(_mm512_setzero_ps(), x))));
  return _mm512_mul_ps(_mm512_mul_ps(g, s), _mm512_fmadd_ps(x, _mm512_sub_ps(one, s), one));
}
#endif

// grad_in[i] = grad_out[i] * silu'(x[i]) for i < n, on the calling thread.
// forward: y = x s, s = sigmoid(x); dy/dx = s (1 + x (1 - s)). Through std::exp one element at a
// time it took six times SiLU's forward in a Llama step (SwiGLU's gate).
template <class T>
void silu_backward_run(T* grad_in, const T* grad_out, const T* x, int64_t n) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {  // bfloat16 comes here in widened blocks
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      store16_from_float(grad_in + i, silu_backward16(load16_as_float(grad_out + i), load16_as_float(x + i)));
    if (i < n)
      store_tail_from_float(grad_in, i, n,
                            silu_backward16(load_tail_as_float(grad_out, i, n, 0.0f), load_tail_as_float(x, i, n, 0.0f)));
    return;
  }
#endif
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  constexpr int64_t kBlock = 1024;  // the sigmoid of one block stays in L1
  Eigen::Array<T, kBlock, 1> s;
  for (int64_t lo = 0; lo < n; lo += kBlock) {
    const int64_t len = n - lo < kBlock ? n - lo : kBlock;
    Eigen::Map<const Array> xa(x + lo, len), g(grad_out + lo, len);
    Eigen::Map<Array> gi(grad_in + lo, len);
    auto sb = s.head(len);
    sb = T(1) / (T(1) + kernel_exp(-xa));  // the forward's sigmoid (kernels/cpu/pointwise.h's SigmoidOp)
    gi = g * sb * (T(1) + xa * (T(1) - sb));
  }
}

// silu_backward_run over the threads (T: float, double or BFloat16).
template <class T>
void silu_backward_contiguous(T* grad_in, const T* grad_out, const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    map_bf16_blocks<2>(grad_in, {grad_out, x}, n, [](float* o, const float* const* in, int64_t len) {
      silu_backward_run<float>(o, in[0], in[1], len);
    });
  } else {
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) { silu_backward_run(grad_in + b, grad_out + b, x + b, e - b); });
  }
}

}  // namespace remat::kernels::cpu
