// Mirrors ATen/native/Dropout.cpp (_masked_scale): the elementwise half of dropout. The keep mask
// itself comes from dropout_mask_kernel in kernels/cpu/random.h (the Philox offset rule).
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/pointwise.h"

namespace remat::kernels::cpu {

// forward: out = x * mask * scale         (scale = 1 / (1 - p); 0 for p = 1)
// backward: dx = dout * mask * scale      (the same map applied to the gradient)
template <class T>
void masked_scale(T* out, const T* in, const bool* mask, int64_t n, double scale) {
  using A = acc_t<T>;
  const A keep_scale = A(scale);
  parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
    // Locals and restrict: with `out` possibly aliasing the captured scale, the compiler reloads
    // it and branches per element instead of vectorising. mask ? s : 0 as float(mask) * s (exact).
    const A s = keep_scale;
    const uint8_t* __restrict m = reinterpret_cast<const uint8_t*>(mask);
    if constexpr (kFloatBlocks<T>) {  // widened a block at a time, scaled as float, rounded once
      alignas(64) float buf[kFloatBlock];
      for (int64_t lo = b; lo < e; lo += kFloatBlock) {
        const int64_t len = std::min(e - lo, kFloatBlock);
        bf16_to_float(in + lo, buf, len);
#pragma omp simd
        for (int64_t k = 0; k < len; ++k) buf[k] = buf[k] * (static_cast<float>(m[lo + k]) * s);
        float_to_bf16(buf, out + lo, len);
      }
    } else {
      const T* __restrict x = in;
      T* __restrict o = out;
#pragma omp simd
      for (int64_t i = b; i < e; ++i) o[i] = T(A(x[i]) * (static_cast<A>(m[i]) * s));
    }
  });
}

}  // namespace remat::kernels::cpu
