// Mirrors ATen/native/cuda/BinaryMulKernel.cu's complex mul and UnaryComplexKernels.cu's conj: the
// elementwise kernels of complex tensors (ComplexFloat, ComplexDouble) that the rotary embeddings
// need, with host launchers over raw pointers (operands of one complex dtype; loop as in
// kernels/cuda/pointwise.h).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/core/scalar_type.h"
#include "kernels/cuda/loop.h"

namespace remat::kernels::cuda {

// out = a * b
void complex_mul(ScalarType dtype, const StridedLoop& loop, void* out, const void* a, const void* b,
                 cudaStream_t stream);
// out = conj(in)
void complex_conj(ScalarType dtype, const StridedLoop& loop, void* out, const void* in, cudaStream_t stream);

}  // namespace remat::kernels::cuda
