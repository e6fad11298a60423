// Mirrors ATen/native/cuda/layer_norm_kernel.cu and the fused RMSNorm kernels: forward and
// fused backward over rows of a contiguous [rows, cols] view (cols = the normalized size).
// Statistics (mean, rstd), weight, bias and the weight/bias gradients have the accumulation dtype
// (float for 16-bit and float inputs, double for double), as kernels/cpu/norm.h; weight and bias
// may be nullptr (none).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "engine/core/scalar_type.h"
#include "kernels/cuda/workspace_sizes.h"  // the workspace sizes

namespace remat::kernels::cuda {

// y = (x - mean) * rstd * w + b;  mean, rstd: [rows] (Welford, biased variance).
void layer_norm_forward(ScalarType dtype, const void* x, const void* weight, const void* bias, void* y, void* mean,
                        void* rstd, int64_t rows, int64_t cols, double eps, cudaStream_t stream);


// Given dy, x and the forward's mean/rstd, with xhat = (x - mean) * rstd and g = dy * w:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat));  dw = sum_rows(dy * xhat);  db = sum_rows(dy).
// grad_weight / grad_bias may be nullptr (not wanted); the column sums are deterministic (fixed
// row chunks, combined in order) and use the workspace.
void layer_norm_backward(ScalarType dtype, const void* grad_out, const void* x, const void* mean, const void* rstd,
                         const void* weight, void* grad_x, void* grad_weight, void* grad_bias, int64_t rows,
                         int64_t cols, void* workspace, cudaStream_t stream);

// y = x * rstd * w with rstd = 1 / sqrt(mean(x^2) + eps): [rows].
void rms_norm_forward(ScalarType dtype, const void* x, const void* weight, void* y, void* rstd, int64_t rows,
                      int64_t cols, double eps, cudaStream_t stream);

// xhat = x * rstd, g = dy * w:  dx = rstd * (g - xhat * mean(g * xhat));  dw = sum_rows(dy * xhat).
void rms_norm_backward(ScalarType dtype, const void* grad_out, const void* x, const void* rstd, const void* weight,
                       void* grad_x, void* grad_weight, int64_t rows, int64_t cols, void* workspace,
                       cudaStream_t stream);

}  // namespace remat::kernels::cuda
