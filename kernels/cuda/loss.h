// Mirrors ATen/native/cuda/Loss.cu and the fused cross-entropy of llm.c: mean over rows of
// logsumexp(logits[i]) - logits[i, target[i]], and its gradient, without materialising the
// softmax in forward.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "engine/core/scalar_type.h"
#include "kernels/cuda/workspace_sizes.h"  // the workspace sizes
#include "kernels/cuda/embedding.h"

namespace remat::kernels::cuda {


// loss (one element of dtype) = mean_i (logsumexp(logits[i, :]) - logits[i, targets[i]]);
// logits [n, c] contiguous. Per-row losses go to the workspace and are summed in row order
// (deterministic). Targets outside [0, c) are reported in *error.
void cross_entropy_forward(ScalarType dtype, const void* logits, const int64_t* targets, void* loss, int64_t n,
                           int64_t c, void* workspace, IndexError* error, cudaStream_t stream);

// grad_logits[i, j] = grad_loss / n * (softmax(logits[i])[j] - (j == targets[i])); grad_loss is
// one element of the accumulation dtype (float, or double for Double) in device memory.
void cross_entropy_backward(ScalarType dtype, const void* grad_loss, const void* logits, const int64_t* targets,
                            void* grad_logits, int64_t n, int64_t c, IndexError* error, cudaStream_t stream);

}  // namespace remat::kernels::cuda
