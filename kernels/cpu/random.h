// Mirrors ATen/native/cpu/DistributionKernels.cpp over the Philox rule of
// engine/core/generator.h: element i of a call depends only on (seed, offset, i).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cpu/parallel.h"
#include "kernels/philox.h"

namespace remat::kernels::cpu {

// out[i] = from + (to - from) * U_i for a contiguous out.
template <class T>
void uniform_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, double from, double to) {
  parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      float u = uint32_to_uniform(philox_word(seed, offset, static_cast<uint64_t>(i)));
      out[i] = static_cast<T>(from + (to - from) * static_cast<double>(u));
    }
  });
}

// Box-Muller on the words of block i/2: element i uses words 2*(i%2) and 2*(i%2)+1.
inline float philox_normal(uint64_t seed, uint64_t offset, uint64_t i) {
  Philox4 r = philox4x32_10(i / 2, offset, seed);
  int w = static_cast<int>(i % 2) * 2;
  float u1 = 1.0f - uint32_to_uniform(r.x[w]);  // (0, 1]: log stays finite
  float u2 = uint32_to_uniform(r.x[w + 1]);
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853071795864f * u2);
}

template <class T>
void normal_kernel(T* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double stddev) {
  parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      out[i] = static_cast<T>(mean + stddev * static_cast<double>(philox_normal(seed, offset, static_cast<uint64_t>(i))));
  });
}

// Dropout keep mask: keep element i iff U_i < 1 - p (compared in float on every device).
inline void dropout_mask_kernel(bool* mask, int64_t n, uint64_t seed, uint64_t offset, double p) {
  const float keep = static_cast<float>(1.0 - p);
  parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      mask[i] = uint32_to_uniform(philox_word(seed, offset, static_cast<uint64_t>(i))) < keep;
  });
}

}  // namespace remat::kernels::cpu
