// Mirrors ATen/native/cuda/PointwiseOpsKernel.cu (addcmul, addcdiv), Lerp.cu and
// MaxMinElementwiseKernel.cu: the elementwise updates optimizers are made of, with the formulas
// of kernels/cpu/pointwise_ops.h (arithmetic in float for 16-bit types; the scalar rounded to
// the element type first, as ATen does).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/core/scalar_type.h"
#include "kernels/cuda/loop.h"

namespace remat::kernels::cuda {

// out = self + value * t1 * t2 (Mul) or self + value * (t1 / t2) (Div); loop operands: out, self,
// t1, t2 (floating dtype).
enum class AddcOp { Mul, Div };
void addc(AddcOp op, ScalarType dtype, const StridedLoop& loop, void* out, const void* self, const void* t1,
          const void* t2, double value, cudaStream_t stream);

// out = self + weight * (end - self) (for |weight| >= 0.5: end - (end - self) * (1 - weight));
// loop operands: out, self, end (floating dtype).
void lerp(ScalarType dtype, const StridedLoop& loop, void* out, const void* self, const void* end, double weight,
          cudaStream_t stream);

// out = max(a, b) (or min); NaN in either input gives NaN. Every dtype.
void extremum(bool is_max, ScalarType dtype, const StridedLoop& loop, void* out, const void* a, const void* b,
              cudaStream_t stream);

}  // namespace remat::kernels::cuda
