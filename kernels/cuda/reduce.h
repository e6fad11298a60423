// Mirrors ATen/native/cuda/Reduce.cuh, ReduceSumProdKernel.cu and ReduceMaxValuesKernel.cu:
// sum / mean / amax over the middle dim of a contiguous [outer, reduced, inner] view (the ops
// layer folds any set of reduced dims into that shape). Sums of 16-bit floats accumulate in
// float, of float in float, of double in double, of Long in int64; max propagates NaN.
//
// The work is split by the sizes alone (never by the device), and partial results are combined
// in a fixed order by a second pass, so a reduction is deterministic: the same inputs give the
// same bits on every run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "engine/core/scalar_type.h"
#include "kernels/cuda/workspace_sizes.h"  // reduce_workspace_bytes: the scratch reduce() needs

namespace remat::kernels::cuda {

enum class ReduceOp { Sum, Max };

// out[o, i] = scale * sum_r in[o, r, i] (Sum) or max_r in[o, r, i] (Max; scale ignored).
// in and out contiguous, of dtype (numeric); reduced >= 1; workspace of
// reduce_workspace_bytes() bytes (or nullptr when that is 0).
void reduce(ReduceOp op, ScalarType dtype, const void* in, void* out, int64_t outer, int64_t reduced, int64_t inner,
            double scale, void* workspace, cudaStream_t stream);

}  // namespace remat::kernels::cuda
