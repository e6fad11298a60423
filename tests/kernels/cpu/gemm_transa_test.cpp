// Tests kernels/cpu/gemm_transa.cpp: which problems it takes, its products against double (tile
// edges in m and n, k from 1 to its bound, alpha, beta, a bias, padded and broadcast operands), the
// same bits on 1 and 2 threads and through gemm_batched, and its error message.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "engine/core/error.h"
#include "kernels/cpu/cpu_model.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_transa.h"

using remat::kernels::cpu::gemm_batched;
using remat::kernels::cpu::gemm_transa_applies;
using remat::kernels::cpu::gemm_transa_fits;
using remat::kernels::cpu::gemm_transa_batched;
using remat::kernels::cpu::kTransaMaxK;
using remat::kernels::cpu::StridedGemm;
using Catch::Contains;

namespace {

// batch entries of c[m, n] = a^T b, a stored [k, lda] (lda >= m), b [k, ldb], c [m, ldc]; a's
// batch stride 0 when broadcast_a.
StridedGemm transposed_a(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc,
                         bool broadcast_a = false) {
  StridedGemm p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.batch_dims = 1;
  p.batch = {batch};
  p.a = {broadcast_a ? 0 : k * lda, 1, lda};
  p.b = {k * ldb, ldb, 1};
  p.c = {m * ldc, ldc, 1};
  return p;
}

std::vector<float> values(size_t n, double phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(0.37 * double(i) + phase));
  return v;
}

// Runs p through gemm_transa_batched and checks every element of c (and that the padding between
// rows is untouched) against double.
void check(const StridedGemm& p, float alpha, float beta, bool with_bias) {
  const int64_t batch = p.batch_count(), lda = p.a[2], ldb = p.b[1], ldc = p.c[1];
  std::vector<float> a = values(static_cast<size_t>((p.a[0] ? batch : 1) * p.k * lda), 0.1);
  std::vector<float> b = values(static_cast<size_t>(batch * p.k * ldb), 0.8);
  std::vector<float> c = values(static_cast<size_t>(batch * p.m * ldc), 2.1), bias = values(static_cast<size_t>(p.n), 1.3);
  const std::vector<float> c0 = c;
  gemm_transa_batched(p, alpha, a.data(), b.data(), beta, c.data(), with_bias ? bias.data() : nullptr);
  for (int64_t e = 0; e < batch; ++e)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < ldc; ++j) {
        const size_t at = static_cast<size_t>(e * p.c[0] + i * ldc + j);
        if (j >= p.n) {
          REQUIRE(c[at] == c0[at]);  // padding
          continue;
        }
        double acc = 0, mag = 0;
        for (int64_t q = 0; q < p.k; ++q) {
          const double x = a[static_cast<size_t>(e * p.a[0] + q * lda + i)], y = b[static_cast<size_t>(e * p.b[0] + q * ldb + j)];
          acc += x * y;
          mag += std::fabs(x * y);
        }
        const double want = alpha * acc + beta * c0[at] + (with_bias ? bias[static_cast<size_t>(j)] : 0.0);
        INFO("entry " << e << " row " << i << " column " << j << " (m " << p.m << ", n " << p.n << ", k " << p.k << ")");
        // float summation in order: at most k roundings of partial sums bounded by mag.
        REQUIRE(c[at] == Approx(want).margin(1e-6 * (std::fabs(alpha) * mag + std::fabs(beta) + 1.0) * double(p.k)));
      }
}

// Whether the kernel can run in this build (it fits the problem), and whether gemm_batched takes it
// here (Intel; AMD family 0x19, Zen 4).
bool avx512_build() {
#if defined(__AVX512F__)
  return true;
#else
  return false;
#endif
}

bool expect_dispatch() {
  return avx512_build() && (remat::kernels::cpu::intel_cpu() || remat::kernels::cpu::amd_family() == 0x19);
}

}  // namespace

TEST_CASE("gemm_transa: fits batched float products with a transposed a and k <= kTransaMaxK; gemm_batched takes them on Intel and AMD Zen 4",
          "[gemm]") {
  const bool fits = avx512_build();
  CHECK(gemm_transa_fits(transposed_a(32, 128, 64, 128, 128, 64, 64)) == fits);  // the GPT's P^T dy
  CHECK(gemm_transa_fits(transposed_a(2, 5, 3, kTransaMaxK, 5, 3, 3)) == fits);
  CHECK(gemm_transa_applies(transposed_a(32, 128, 64, 128, 128, 64, 64)) == expect_dispatch());
  CHECK(gemm_transa_applies(transposed_a(2, 5, 3, kTransaMaxK, 5, 3, 3)) == expect_dispatch());
  CHECK_FALSE(gemm_transa_fits(transposed_a(2, 5, 3, kTransaMaxK + 1, 5, 3, 3)));  // k past the bound
  CHECK_FALSE(gemm_transa_fits(transposed_a(1, 128, 64, 128, 128, 64, 64)));      // not batched
  CHECK_FALSE(gemm_transa_applies(transposed_a(2, 5, 3, kTransaMaxK + 1, 5, 3, 3)));
  StridedGemm row_major_a = transposed_a(4, 8, 8, 8, 8, 8, 8);
  row_major_a.a = {64, 8, 1};
  CHECK_FALSE(gemm_transa_fits(row_major_a));
  StridedGemm transposed_b = transposed_a(4, 8, 8, 8, 8, 8, 8);
  transposed_b.b = {64, 1, 8};
  CHECK_FALSE(gemm_transa_fits(transposed_b));
}

TEST_CASE("gemm_transa: matches double at the tile edges, with alpha, beta, a bias and padded or broadcast operands",
          "[gemm]") {
  if (!avx512_build()) {
    SUCCEED("not an AVX-512 build: gemm_transa never runs (its error is tested below)");
    return;
  }
  for (int64_t m : {1, 5, 6, 7, 13, 128})
    for (int64_t n : {1, 15, 16, 17, 64, 65, 130})
      for (int64_t k : {1, 3, 128}) check(transposed_a(3, m, n, k, m, n, n), 1.0f, 0.0f, false);
  check(transposed_a(32, 128, 64, 128, 128, 64, 64), 1.0f, 0.0f, false);  // the GPT's shape
  check(transposed_a(2, 9, 20, kTransaMaxK, 9, 20, 20), 1.0f, 0.0f, false);
  check(transposed_a(3, 7, 33, 10, 12, 40, 35), 0.5f, 1.5f, false);  // padded lda, ldb, ldc; alpha and beta
  check(transposed_a(3, 7, 33, 10, 7, 33, 33), 1.0f, 0.0f, true);    // a bias
  check(transposed_a(4, 11, 18, 9, 11, 18, 18, true), 1.0f, 1.0f, false);  // a broadcast over the batch
}

TEST_CASE("gemm_transa: the same bits on 1 and 2 threads, and through gemm_batched", "[gemm]") {
  if (!avx512_build()) {
    SUCCEED("not an AVX-512 build: gemm_transa never runs");
    return;
  }
  const StridedGemm p = transposed_a(9, 128, 64, 128, 128, 64, 64);
  const std::vector<float> a = values(static_cast<size_t>(9 * 128 * 128), 0.3), b = values(static_cast<size_t>(9 * 128 * 64), 0.6);
  std::vector<float> one(static_cast<size_t>(9 * 128 * 64)), two(one.size()), via_gemm(one.size());
#ifdef _OPENMP
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
#endif
  gemm_transa_batched(p, 1.0f, a.data(), b.data(), 0.0f, one.data(), nullptr);
#ifdef _OPENMP
  omp_set_num_threads(2);
#endif
  gemm_transa_batched(p, 1.0f, a.data(), b.data(), 0.0f, two.data(), nullptr);
  gemm_batched<float>(p, 1.0f, a.data(), b.data(), 0.0f, via_gemm.data());
#ifdef _OPENMP
  omp_set_num_threads(before);
#endif
  CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0);
  if (expect_dispatch()) CHECK(std::memcmp(one.data(), via_gemm.data(), one.size() * sizeof(float)) == 0);
}

TEST_CASE("gemm_transa: a problem it does not take is refused with its sizes", "[gemm]") {
  const StridedGemm p = transposed_a(2, 5, 3, kTransaMaxK + 1, 5, 3, 3);
  std::vector<float> a(static_cast<size_t>(2 * 5 * (kTransaMaxK + 1))), b(static_cast<size_t>(2 * 3 * (kTransaMaxK + 1))), c(30);
  CHECK_THROWS_WITH(gemm_transa_batched(p, 1.0f, a.data(), b.data(), 0.0f, c.data(), nullptr),
                    Contains("gemm_transa_batched: the problem (m 5, n 3, k 257)"));
}
