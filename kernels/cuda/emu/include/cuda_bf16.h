// <cuda_bf16.h> under --config=cuda_emu: __nv_bfloat16 and the conversions remat's kernels use
// (mirrors NVIDIA's cuda_bf16.h: round to nearest even; a NaN becomes 0x7FFF, as the GPU's).
#pragma once

#include <cstdint>
#include <cstring>

struct __nv_bfloat16 {
  unsigned short __x = 0;
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : __x(from_float(f)) {}  // NOLINT: implicit, as NVIDIA's
  operator float() const {                        // NOLINT
    const uint32_t u = static_cast<uint32_t>(__x) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  static unsigned short from_float(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
    return static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
};

inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return static_cast<float>(h); }
