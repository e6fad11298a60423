// Mirrors ATen/native/cuda/DistributionUniform.cu, DistributionNormal.cu and Dropout.cu over
// the Philox rule of engine/core/generator.h: element i of a call at (seed, offset) uses the
// same 32-bit words as kernels/cpu/random.h, so uniform_ and dropout masks are the CPU's bits.
// (normal_ uses the device's logf/cosf/sqrtf, which may differ from the host's in the last
// bits.) Outputs are contiguous.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/scalar_type.h"

namespace remat::kernels::cuda {

// out[i] = from + (to - from) * U_i (computed in double, then rounded to dtype).
void uniform(ScalarType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double from, double to,
             cudaStream_t stream);
// out[i] = mean + std * N_i (Box-Muller on block i/2, words 2*(i%2) and 2*(i%2)+1).
void normal(ScalarType dtype, void* out, int64_t n, uint64_t seed, uint64_t offset, double mean, double std,
            cudaStream_t stream);
// mask[i] = U_i < 1 - p (compared in float); out[i] = mask[i] ? x[i] * scale : 0.
void dropout(ScalarType dtype, const void* x, void* out, bool* mask, int64_t n, uint64_t seed, uint64_t offset,
             double p, double scale, cudaStream_t stream);
// Only the mask (the CPU kernel dropout_mask_kernel, for parity tests).
void dropout_mask(bool* mask, int64_t n, uint64_t seed, uint64_t offset, double p, cudaStream_t stream);

}  // namespace remat::kernels::cuda
