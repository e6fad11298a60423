// Mirrors ATen/native/cuda/Embedding.cu: embedding lookup and its dense backward.
//
// The backward is deterministic and sort-free: a histogram of the indices (integer atomics,
// exact), an exclusive scan into segment offsets, a stable placement of each position into its
// index's segment (ranked within fixed tiles, in position order), then each weight row sums its
// gradient rows in increasing position order, so the result is the same bits on every run (and
// the same order of additions as a sequential CPU loop).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "engine/core/scalar_type.h"
#include "kernels/cuda/workspace_sizes.h"  // the workspace sizes

namespace remat::kernels::cuda {

// Where a kernel reports out-of-range indices: the smallest offending position (atomicMin), so
// the error names the same index as the CPU kernel's sequential check. The caller sets it to
// kNoIndexError (every byte 0x7F) before the launch and reads it after.
struct IndexError {
  unsigned long long position;
};
constexpr unsigned long long kNoIndexError = 0x7F7F7F7F7F7F7F7FULL;

// out[i, :] = weight[indices[i], :]; weight [num_weights, dim], out [n, dim], contiguous.
// Out-of-range indices are reported in *error (their rows are written as zeros).
void embedding_forward(ScalarType dtype, const void* weight, const int64_t* indices, void* out, int64_t n,
                       int64_t num_weights, int64_t dim, IndexError* error, cudaStream_t stream);


// grad_weight[v, :] = sum over i with indices[i] == v of grad[i, :] (in increasing i);
// grad [n, dim], grad_weight [num_weights, dim], contiguous. Out-of-range indices are reported
// in *error (and skipped).
void embedding_backward(ScalarType dtype, const void* grad, const int64_t* indices, void* grad_weight, int64_t n,
                        int64_t num_weights, int64_t dim, void* workspace, IndexError* error, cudaStream_t stream);

}  // namespace remat::kernels::cuda
