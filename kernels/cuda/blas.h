// Mirrors ATen/cuda/CUDABlas.h and CublasHandlePool.cpp: row-major GEMM through cuBLAS.
//
// Row-major C = A B is column-major C^T = B^T A^T, so each call swaps the operands (the
// "transpose trick"): no data moves. float/double multiply in their own precision; bf16/f16
// multiply on tensor cores with float accumulation. TF32 for float is off unless
// set_allow_tf32(true) (torch.backends.cuda.matmul.allow_tf32). One cuBLAS handle per device,
// bound to the caller's stream for each call.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/scalar_type.h"

namespace remat::kernels::cuda {

void set_allow_tf32(bool allow);
bool allow_tf32();

// C[m, n] = alpha * op(A) op(B) + beta * C, all row-major with leading dimensions (elements):
// trans_a == false: A is [m, k] with row stride lda; true: A is stored as [k, m] (its transpose)
// with row stride lda. Same for B ([k, n], or stored [n, k]). dtype: floating.
void gemm(ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const void* a,
          int64_t lda, const void* b, int64_t ldb, double beta, void* c, int64_t ldc, cudaStream_t stream);

// batch GEMMs, operand i at a + i * stride_a (a stride of 0 broadcasts), b + i * stride_b,
// c + i * stride_c (strides in elements).
void gemm_strided_batched(ScalarType dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                          const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b,
                          double beta, void* c, int64_t ldc, int64_t stride_c, int64_t batch, cudaStream_t stream);

// The cuBLAS status name (CUBLAS_STATUS_...) of a status code, for error messages.
const char* cublas_status_name(int status);

}  // namespace remat::kernels::cuda
