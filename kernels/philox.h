// Mirrors ATen/core/PhiloxRNGEngine.h: Philox4x32-10 (Salmon et al., "Random123", SC'11).
// Header-only and usable from host and device code, so CPU and CUDA produce the same bits.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define REMAT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define REMAT_HOST_DEVICE inline
#endif

namespace remat::kernels {

struct Philox4 {
  uint32_t x[4];
};

REMAT_HOST_DEVICE uint32_t mulhilo32(uint32_t a, uint32_t b, uint32_t* hi) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

// Ten rounds of Philox4x32 on counter c with key k.
REMAT_HOST_DEVICE Philox4 philox4x32_10(uint64_t block, uint64_t offset, uint64_t seed) {
  uint32_t c0 = static_cast<uint32_t>(block), c1 = static_cast<uint32_t>(block >> 32);
  uint32_t c2 = static_cast<uint32_t>(offset), c3 = static_cast<uint32_t>(offset >> 32);
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    uint32_t lo0 = mulhilo32(kM0, c0, &hi0);
    uint32_t lo1 = mulhilo32(kM1, c2, &hi1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// Uniform float in [0, 1) from the top 24 bits (exact in float on every device).
REMAT_HOST_DEVICE float uint32_to_uniform(uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

// Element i's 32-bit word of a call at (seed, offset): the rule in engine/core/generator.h.
REMAT_HOST_DEVICE uint32_t philox_word(uint64_t seed, uint64_t offset, uint64_t i) {
  return philox4x32_10(i / 4, offset, seed).x[i % 4];
}

}  // namespace remat::kernels
