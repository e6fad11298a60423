// Mirrors ATen/native/cuda/FusedSgdKernel.cu (_fused_sgd_kernel_cuda_, torch.optim.SGD with
// fused=True): one elementwise pass over a parameter, its gradient and its momentum buffer.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/scalar_type.h"
#include "kernels/sgd_step.h"

namespace remat::kernels::cuda {

using kernels::SGDStep;  // kernels/sgd_step.h

// SGDStep's rule for each i (param, grad and momentum_buffer of dtype; momentum_buffer null when
// momentum is 0). Each product and sum rounded once, never fused into an FMA, with the hyperparameters rounded
// to the arithmetic type first: for Float and Double the op sequence's result, bit for bit (as
// kernels/cpu/fused_sgd.h). BFloat16 computes in float and stores param and buf as bf16.
void sgd_step(ScalarType dtype, void* param, const void* grad, void* momentum_buffer, int64_t n,
              const SGDStep& args, cudaStream_t stream);

}  // namespace remat::kernels::cuda
