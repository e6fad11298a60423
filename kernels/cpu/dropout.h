// Mirrors ATen/native/Dropout.cpp (_masked_scale): the elementwise half of dropout. The keep mask
// itself comes from dropout_mask_kernel in kernels/cpu/random.h (the Philox offset rule).
#pragma once

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
    for (int64_t i = b; i < e; ++i) out[i] = T(A(in[i]) * (mask[i] ? keep_scale : A(0)));
  });
}

}  // namespace remat::kernels::cpu
