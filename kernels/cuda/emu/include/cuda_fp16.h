// <cuda_fp16.h> under --config=cuda_emu: __half and the conversions remat's kernels use
// (mirrors NVIDIA's cuda_fp16.h: IEEE binary16, round to nearest even).
#pragma once

#include <cstdint>

#include "engine/core/bfloat16.h"

struct __half {
  unsigned short __x = 0;
  __half() = default;
  __half(float f) : __x(remat::Half::from_float(f)) {}                // NOLINT: implicit, as NVIDIA's
  operator float() const { return remat::Half::to_float(__x); }  // NOLINT
};

inline __half __float2half_rn(float f) { return __half(f); }
inline __half __float2half(float f) { return __half(f); }
inline float __half2float(__half h) { return static_cast<float>(h); }
