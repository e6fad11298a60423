// Mirrors ATen/native/CPUBlas.cpp.
#include "kernels/cpu/gemm.h"

#include <Eigen/Core>
#include <vector>

#ifdef REMAT_USE_OPENBLAS
#include <cblas.h>
#endif

#include "kernels/cpu/parallel.h"

namespace remat::kernels::cpu {

namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstRowMap = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using RowMap = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;

template <class T>
void eigen_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
                int64_t ldb, T beta, T* c, int64_t ldc) {
  RowMap<T> C(c, m, n, Eigen::OuterStride<>(ldc));
  ConstRowMap<T> A(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  ConstRowMap<T> B(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  if (beta == T(0)) C.setZero();
  else if (beta != T(1)) C *= beta;
  if (!ta && !tb) C.noalias() += alpha * A * B;
  else if (ta && !tb) C.noalias() += alpha * A.transpose() * B;
  else if (!ta && tb) C.noalias() += alpha * A * B.transpose();
  else C.noalias() += alpha * A.transpose() * B.transpose();
}

template <class H>
void widened_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, H alpha, const H* a, int64_t lda, const H* b,
                  int64_t ldb, H beta, H* c, int64_t ldc) {
  // Widen the operands to float (f32 accumulation), multiply, round the result once.
  int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  std::vector<float> af(static_cast<size_t>(ar * ac)), bf(static_cast<size_t>(br * bc)), cf(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < ar; ++i)
    for (int64_t j = 0; j < ac; ++j) af[static_cast<size_t>(i * ac + j)] = float(a[i * lda + j]);
  for (int64_t i = 0; i < br; ++i)
    for (int64_t j = 0; j < bc; ++j) bf[static_cast<size_t>(i * bc + j)] = float(b[i * ldb + j]);
  float fbeta = float(beta);
  if (fbeta != 0.0f)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) cf[static_cast<size_t>(i * n + j)] = float(c[i * ldc + j]);
  gemm<float>(ta, tb, m, n, k, float(alpha), af.data(), ac, bf.data(), bc, fbeta, cf.data(), n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = H(cf[static_cast<size_t>(i * n + j)]);
}

}  // namespace

const char* gemm_backend() {
#ifdef REMAT_USE_OPENBLAS
  return "OpenBLAS";
#else
  return "Eigen";
#endif
}

template <>
void gemm<float>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
#ifdef REMAT_USE_OPENBLAS
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
#else
  eigen_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

template <>
void gemm<double>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                  const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
#ifdef REMAT_USE_OPENBLAS
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
#else
  eigen_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

template <>
void gemm<BFloat16>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, BFloat16 alpha, const BFloat16* a,
                    int64_t lda, const BFloat16* b, int64_t ldb, BFloat16 beta, BFloat16* c, int64_t ldc) {
  widened_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <>
void gemm<Half>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Half alpha, const Half* a, int64_t lda,
                const Half* b, int64_t ldb, Half beta, Half* c, int64_t ldc) {
  widened_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace remat::kernels::cpu
