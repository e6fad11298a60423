// Mirrors ATen/native/cpu/FusedAdamKernel.cpp (_fused_adamw_ on CPU): one pass over a
// parameter, its gradient and both moments, instead of the eight elementwise ops (and two
// temporaries) of the single-tensor update. Arithmetic in float for bfloat16 parameters (the
// moments are stored in the parameter's dtype, as PyTorch's fused kernel does).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "engine/core/bfloat16.h"
#include "kernels/cpu/bfloat16_convert.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/pointwise.h"

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
}  // namespace detail

// p, m, v updated in place from g; all contiguous, n elements, one dtype T (float, double or
// BFloat16).
template <class T>
void fused_adamw(T* p, const T* g, T* m, T* v, int64_t n, const AdamWStep& s) {
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
