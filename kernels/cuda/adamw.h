// Mirrors ATen/native/cuda/fused_adamw_impl.cu (torch.optim.AdamW with fused=True, amsgrad
// off): one elementwise step over a flat parameter, in place.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/scalar_type.h"

namespace remat::kernels::cuda {

// For each i (param, grad of dtype; exp_avg, exp_avg_sq in float, or double for Double):
//   param *= 1 - lr * weight_decay
//   exp_avg = beta1 * exp_avg + (1 - beta1) * grad
//   exp_avg_sq = beta2 * exp_avg_sq + (1 - beta2) * grad^2
//   param -= lr / (1 - beta1^step) * exp_avg / (sqrt(exp_avg_sq) / sqrt(1 - beta2^step) + eps)
// step counts from 1.
void adamw_step(ScalarType dtype, void* param, const void* grad, void* exp_avg, void* exp_avg_sq, int64_t n,
                double lr, double beta1, double beta2, double eps, double weight_decay, int64_t step,
                cudaStream_t stream);

}  // namespace remat::kernels::cuda
