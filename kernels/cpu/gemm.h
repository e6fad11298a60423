// Mirrors ATen/native/cpu/BlasKernel.cpp and CPUBlas.cpp: C = alpha * op(A) op(B) + beta * C,
// row-major, with leading dimensions, and a batched product over arbitrary strides. float (and
// bfloat16 where the CPU has bf16 instructions) go to oneDNN's matmul when remat is built with it
// (REMAT_USE_ONEDNN); float/double go to OpenBLAS when built with it (REMAT_USE_OPENBLAS), else
// to Eigen's GEMM; other 16-bit cases are widened to float. A batched float product with a transposed a
// and a short reduction runs in gemm_transa.h's kernel on an Intel CPU. A small float gemm (m n k <= 2^20:
// flash attention's blocks) skips oneDNN, whose per-call work would be as long as the product.
#pragma once

#include <array>
#include <cstdint>

#include "engine/core/bfloat16.h"

namespace remat::kernels::cpu {

template <class T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// A batched matrix product in element strides: for every batch index i (batch dims outermost
// first), c[i] = alpha * a[i] b[i] + beta * c[i] (+ bias[j] on every row), with a[i] m x k,
// b[i] k x n and c[i] m x n. Each operand's strides are its batch dims' strides, then its row
// and column strides (a batch stride may be 0: a broadcast operand). Each of a and b must have a
// unit stride in one of its two matrix dims (row- or column-major rows); c's column stride is 1.
struct StridedGemm {
  static constexpr int kMaxBatchDims = 4;
  int64_t m = 0, n = 0, k = 0;
  int batch_dims = 0;
  std::array<int64_t, kMaxBatchDims> batch{};  // sizes of the batch dims
  // [batch strides..., row stride, column stride]: entries 0 .. batch_dims + 1.
  std::array<int64_t, kMaxBatchDims + 2> a{}, b{}, c{};

  int64_t batch_count() const {
    int64_t r = 1;
    for (int d = 0; d < batch_dims; ++d) r *= batch[static_cast<size_t>(d)];
    return r;
  }
  // Element offset of batch entry i (row-major over the batch dims) in an operand.
  int64_t offset(const std::array<int64_t, kMaxBatchDims + 2>& strides, int64_t i) const {
    int64_t off = 0;
    for (int d = batch_dims - 1; d >= 0; --d) {
      const int64_t size = batch[static_cast<size_t>(d)];
      off += (i % size) * strides[static_cast<size_t>(d)];
      i /= size;
    }
    return off;
  }
};

// bias: null, or n values added to every row (then alpha must be 1 and beta 0). Bitwise
// reproducible: the same problem on the same thread count gives the same bits.
template <class T>
void gemm_batched(const StridedGemm& p, T alpha, const T* a, const T* b, T beta, T* c, const T* bias = nullptr);

// Which library runs float GEMM ("oneDNN", "OpenBLAS" or "Eigen").
const char* gemm_backend();

// Whether a bf16 product here is widened to float (f32 accumulation, the float GEMM, the result
// rounded once) rather than run by oneDNN's bf16 matmul: on an Intel CPU where oneDNN has no AMX,
// and wherever oneDNN has no bf16 implementation at all. A function of the machine only, so a
// problem always takes the same path (the same bits).
bool bf16_products_widen();

}  // namespace remat::kernels::cpu
