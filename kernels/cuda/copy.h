// Mirrors ATen/native/cuda/Copy.cu, FillKernel.cu and TriangularOps.cu: strided copies with
// dtype conversion (contiguous(), to(dtype), copy_, cat, expand materialised), fill, triu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/scalar_type.h"
#include "kernels/cuda/loop.h"

namespace remat::kernels::cuda {

// out = static_cast<out_dtype>(in) over loop (operands: out, in), any pair of dtypes, rounded as
// the CPU's copy_kernel rounds.
void copy(ScalarType out_dtype, ScalarType in_dtype, const StridedLoop& loop, void* out, const void* in,
          cudaStream_t stream);
// out = value over loop (operand: out).
void fill(ScalarType dtype, const StridedLoop& loop, void* out, double value, cudaStream_t stream);
// In place on a contiguous [batch, rows, cols]: zero element (i, j) where j - i < diagonal.
void triu_(ScalarType dtype, void* data, int64_t batch, int64_t rows, int64_t cols, int64_t diagonal,
           cudaStream_t stream);

}  // namespace remat::kernels::cuda
