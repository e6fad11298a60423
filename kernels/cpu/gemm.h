// Mirrors ATen/native/cpu/BlasKernel.cpp and CPUBlas.cpp: C = alpha * op(A) op(B) + beta * C,
// row-major, with leading dimensions. float/double go to OpenBLAS when remat is built with it
// (REMAT_USE_OPENBLAS), else to Eigen's GEMM; 16-bit types are widened to float.
#pragma once

#include <cstdint>

#include "engine/core/bfloat16.h"

namespace remat::kernels::cpu {

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// Which library runs float GEMM ("OpenBLAS" or "Eigen").
const char* gemm_backend();

}  // namespace remat::kernels::cpu
