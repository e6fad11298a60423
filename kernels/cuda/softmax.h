// Mirrors ATen/native/cuda/SoftMax.cu: softmax and log_softmax, forward and backward, over the
// middle dim of a contiguous [outer, dim_size, inner] view. 16-bit inputs compute in float.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/scalar_type.h"

namespace remat::kernels::cuda {

// y = softmax(x) (log: log_softmax) along the middle dim; floating dtypes.
void softmax_forward(ScalarType dtype, const void* x, void* y, int64_t outer, int64_t dim_size, int64_t inner,
                     bool log, cudaStream_t stream);

// Given y = softmax(x) (log: y = log_softmax(x)) and dy:
//   softmax:     dx = y * (dy - sum(dy * y))
//   log_softmax: dx = dy - exp(y) * sum(dy)
void softmax_backward(ScalarType dtype, const void* grad_out, const void* y, void* grad_in, int64_t outer,
                      int64_t dim_size, int64_t inner, bool log, cudaStream_t stream);

// _masked_softmax over rows of dim_size (the last dim), row r reading mask row r % mask_rows
// (true: masked out): y = masked ? 0 : softmax over the unmasked (a row masked throughout: 0).
void masked_softmax_forward(ScalarType dtype, const void* x, const bool* mask, void* y, int64_t rows,
                            int64_t dim_size, int64_t mask_rows, cudaStream_t stream);

// Given y = _masked_softmax(x, mask) and dy: dx = masked ? 0 : y * (dy - sum(dy * y)).
void masked_softmax_backward(ScalarType dtype, const void* grad_out, const void* y, const bool* mask, void* grad_in,
                             int64_t rows, int64_t dim_size, int64_t mask_rows, cudaStream_t stream);

}  // namespace remat::kernels::cuda
