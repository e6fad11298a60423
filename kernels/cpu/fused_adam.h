// Mirrors ATen/native/cpu/FusedAdamKernel.cpp (_fused_adamw_ on CPU): one pass over a
// parameter, its gradient and both moments, instead of the eight elementwise ops (and two
// temporaries) of the single-tensor update. Arithmetic in float for bfloat16 parameters (the
// moments are stored in the parameter's dtype, as PyTorch's fused kernel does). With AVX-512,
// float and bfloat16 run 16 lanes at a time (the tail too, masked or padded), so each element
// takes the same arithmetic whatever the thread count's chunking: results are bitwise the same
// run to run and for any thread count.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "engine/core/bfloat16.h"
#include "kernels/cpu/bfloat16_convert.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/pointwise.h"
#include "kernels/cpu/x86_intrinsics.h"

namespace remat::kernels::cpu {

struct AdamWStep {
  double lr, beta1, beta2, weight_decay, eps;
  int64_t step;  // 1 at the first update
  bool maximize;
};

namespace detail {
// The update of n contiguous elements in A (float or double).
template <class A>
void adamw_run(A* p, const A* g, A* m, A* v, int64_t n, const AdamWStep& s) {
  const A decay = A(1.0 - s.lr * s.weight_decay);
  const A w1 = A(1.0 - s.beta1), b2 = A(s.beta2), w2 = A(1.0 - s.beta2);
  const A step_size = A(s.lr / (1.0 - std::pow(s.beta1, double(s.step))));
  const A inv_bc2_sqrt = A(1.0 / std::sqrt(1.0 - std::pow(s.beta2, double(s.step))));
  const A eps = A(s.eps), sign = s.maximize ? A(-1) : A(1);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const A grad = sign * g[i];
    const A param = p[i] * decay;
    const A mi = m[i] + w1 * (grad - m[i]);  // lerp(m, g, 1 - beta1)
    const A vi = v[i] * b2 + w2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    p[i] = param - step_size * mi / (std::sqrt(vi) * inv_bc2_sqrt + eps);
  }
}

#if defined(__AVX512F__)
// The update of 16 lanes: adamw_run's arithmetic, its products and sums fused where marked. The
// constants are floats, broadcast where used (hoisted out of the loops once inlined): an object of
// __m512 members needs 64-byte alignment, which ASan's fake stack (detect_stack_use_after_return)
// did not give it.
struct AdamW16 {
  float decay, w1, b2, w2, step_size, inv_bc2_sqrt, eps, sign;
  explicit AdamW16(const AdamWStep& s)
      : decay(float(1.0 - s.lr * s.weight_decay)),
        w1(float(1.0 - s.beta1)),
        b2(float(s.beta2)),
        w2(float(1.0 - s.beta2)),
        step_size(float(s.lr / (1.0 - std::pow(s.beta1, double(s.step))))),
        inv_bc2_sqrt(float(1.0 / std::sqrt(1.0 - std::pow(s.beta2, double(s.step))))),
        eps(float(s.eps)),
        sign(s.maximize ? -1.0f : 1.0f) {}
  void operator()(__m512& p, __m512 g, __m512& m, __m512& v) const {
    const __m512 grad = _mm512_mul_ps(_mm512_set1_ps(sign), g);
    const __m512 param = _mm512_mul_ps(p, _mm512_set1_ps(decay));
    m = _mm512_fmadd_ps(_mm512_set1_ps(w1), _mm512_sub_ps(grad, m), m);  // lerp(m, g, 1 - beta1)
    v = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(w2), grad), grad,
                        _mm512_mul_ps(v, _mm512_set1_ps(b2)));  // v b2 + (1 - b2) g^2
    const __m512 denom = _mm512_fmadd_ps(_mm512_sqrt_ps(v), _mm512_set1_ps(inv_bc2_sqrt),
                                         _mm512_set1_ps(eps));  // sqrt(v / bc2) + eps
    p = _mm512_sub_ps(param, _mm512_div_ps(_mm512_mul_ps(_mm512_set1_ps(step_size), m), denom));
  }
};

// float: 16 at a time, the tail under a mask. All four streams are prefetched ahead
// (kernels/cpu/prefetch.h): in a step they come from memory, and with four of them the hardware
// prefetcher fell behind (one [4096, 4096] parameter, 1 thread, Xeon with AMX: 16.6-17.1 -> 15.3-16.5
// ms in f32, 10.2-10.7 -> 7.4-7.9 in bf16).
inline void adamw_avx512(float* p, const float* g, float* m, float* v, int64_t n, const AdamW16& u) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
    prefetch_ahead(p + i), prefetch_ahead(g + i), prefetch_ahead(m + i), prefetch_ahead(v + i);
    __m512 pv = _mm512_maskz_loadu_ps(k, p + i), mv = _mm512_maskz_loadu_ps(k, m + i);
    __m512 vv = _mm512_maskz_loadu_ps(k, v + i);
    u(pv, _mm512_maskz_loadu_ps(k, g + i), mv, vv);
    _mm512_mask_storeu_ps(p + i, k, pv);
    _mm512_mask_storeu_ps(m + i, k, mv);
    _mm512_mask_storeu_ps(v + i, k, vv);
  }
}

// bfloat16: widened 16 at a time, rounded back as float_to_bf16 does; the tail through a padded copy.
inline void adamw_avx512(BFloat16* p, const BFloat16* g, BFloat16* m, BFloat16* v, int64_t n, const AdamW16& u) {
  auto store = [](BFloat16* dst, __m512 x) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), float_to_bf16x16(x));
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    prefetch_ahead(p + i), prefetch_ahead(g + i), prefetch_ahead(m + i), prefetch_ahead(v + i);
    __m512 pv = bf16x16_to_float(p + i), mv = bf16x16_to_float(m + i), vv = bf16x16_to_float(v + i);
    u(pv, bf16x16_to_float(g + i), mv, vv);
    store(p + i, pv);
    store(m + i, mv);
    store(v + i, vv);
  }
  if (i == n) return;
  BFloat16 t[4][16] = {};
  const int64_t len = n - i;
  for (int64_t j = 0; j < len; ++j) t[0][j] = p[i + j], t[1][j] = g[i + j], t[2][j] = m[i + j], t[3][j] = v[i + j];
  adamw_avx512(t[0], t[1], t[2], t[3], 16, u);
  for (int64_t j = 0; j < len; ++j) p[i + j] = t[0][j], m[i + j] = t[2][j], v[i + j] = t[3][j];
}
#endif
}  // namespace detail

// p, m, v updated in place from g; all contiguous, n elements, one dtype T (float, double or
// BFloat16).
template <class T>
void fused_adamw(T* p, const T* g, T* m, T* v, int64_t n, const AdamWStep& s) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>) {
    const detail::AdamW16 u(s);
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) { detail::adamw_avx512(p + b, g + b, m + b, v + b, e - b, u); });
    return;
  }
#endif
  if constexpr (std::is_same_v<T, BFloat16>) {
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
      alignas(64) float pf[kFloatBlock], gf[kFloatBlock], mf[kFloatBlock], vf[kFloatBlock];
      for (int64_t lo = b; lo < e; lo += kFloatBlock) {
        const int64_t len = e - lo < kFloatBlock ? e - lo : kFloatBlock;
        bf16_to_float(p + lo, pf, len);
        bf16_to_float(g + lo, gf, len);
        bf16_to_float(m + lo, mf, len);
        bf16_to_float(v + lo, vf, len);
        detail::adamw_run<float>(pf, gf, mf, vf, len, s);
        float_to_bf16(pf, p + lo, len);
        float_to_bf16(mf, m + lo, len);
        float_to_bf16(vf, v + lo, len);
      }
    });
  } else {
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
      detail::adamw_run<T>(p + b, g + b, m + b, v + b, e - b, s);
    });
  }
}

}  // namespace remat::kernels::cpu
