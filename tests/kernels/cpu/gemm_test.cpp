// Tests kernels/cpu/gemm.cpp: the batched strided product (oneDNN, or the OpenBLAS/Eigen loop)
// against products in double, for every transposition, strided and broadcast batches, a bias,
// beta, k = 0, bf16; a batch split between the threads; bitwise reproducibility; the error messages.
#include <catch2/catch.hpp>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cpu/gemm.h"

using remat::BFloat16;
using remat::kernels::cpu::gemm;
using remat::kernels::cpu::gemm_batched;
using remat::kernels::cpu::StridedGemm;
using Catch::Contains;

namespace {

// Element (i, j) of batch entry b of an operand with p's batch sizes and the given strides.
template <class T>
double at(const StridedGemm& p, const T* base, const std::array<int64_t, 6>& st, int64_t b, int64_t i, int64_t j) {
  const size_t r = static_cast<size_t>(p.batch_dims);
  const T v = base[p.offset(st, b) + i * st[r] + j * st[r + 1]];
  if constexpr (std::is_same_v<T, BFloat16>) return double(float(v));
  else return double(v);
}

template <class T>
std::vector<double> naive(const StridedGemm& p, double alpha, const T* a, const T* b, double beta, const T* c0,
                          const T* bias) {
  std::vector<double> out;
  for (int64_t e = 0; e < p.batch_count(); ++e)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < p.k; ++q) acc += at(p, a, p.a, e, i, q) * at(p, b, p.b, e, q, j);
        double v = alpha * acc + (beta != 0 ? beta * at(p, c0, p.c, e, i, j) : 0.0);
        out.push_back(v + (bias ? at(StridedGemm{}, bias, {0, 1}, 0, 0, j) : 0.0));
      }
  return out;
}

template <class T>
std::vector<double> read(const StridedGemm& p, const T* c) {
  std::vector<double> out;
  for (int64_t e = 0; e < p.batch_count(); ++e)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) out.push_back(at(p, c, p.c, e, i, j));
  return out;
}

template <class T>
std::vector<T> values(size_t n, double phase) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = T(static_cast<float>(std::sin(0.7 * double(i) + phase)));
  return v;
}

// A dense [m, n] problem with a and/or b transposed in memory.
StridedGemm plain(int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
  StridedGemm p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = {ta ? 1 : k, ta ? m : 1};
  p.b = {tb ? 1 : n, tb ? k : 1};
  p.c = {n, 1};
  return p;
}

template <class T>
void check_problem(const StridedGemm& p, size_t a_len, size_t b_len, size_t c_len, double alpha, double beta,
                   bool with_bias, double tol) {
  std::vector<T> a = values<T>(a_len, 0.1), b = values<T>(b_len, 0.9), c = values<T>(c_len, 2.3), bias = values<T>(p.n, 1.7);
  const std::vector<T> c0 = c;
  const T* bp = with_bias ? bias.data() : nullptr;
  std::vector<double> want = naive(p, alpha, a.data(), b.data(), beta, c0.data(), bp);
  gemm_batched<T>(p, T(alpha), a.data(), b.data(), T(beta), c.data(), bp);
  std::vector<double> got = read(p, c.data());
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    // bf16: the result's own rounding, half an ulp (2^-9 relative), on top of the margin.
    CHECK(got[i] == Approx(want[i]).epsilon(std::is_same_v<T, BFloat16> ? 1.0 / 256 : 0.0).margin(tol));
  }
}

}  // namespace

TEST_CASE("gemm_batched: every transposition of a 2-D product matches double", "[gemm]") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      INFO("trans_a " << ta << ", trans_b " << tb);
      check_problem<float>(plain(37, 29, 53, ta, tb), 37 * 53, 53 * 29, 37 * 29, 1.0, 0.0, false, 1e-4);
      check_problem<double>(plain(5, 7, 3, ta, tb), 15, 21, 35, 1.0, 0.0, false, 1e-12);
      check_problem<float>(plain(4, 3, 600, ta, tb), 2400, 1800, 12, 1.0, 0.0, false, 1e-3);  // long reduction
    }
}

TEST_CASE("gemm_batched: alpha, beta and a bias", "[gemm]") {
  StridedGemm p = plain(8, 6, 5, false, true);
  check_problem<float>(p, 40, 30, 48, 0.5, 0.0, false, 1e-5);
  check_problem<float>(p, 40, 30, 48, 1.0, 1.0, false, 1e-5);
  check_problem<float>(p, 40, 30, 48, 2.0, 0.25, false, 1e-5);
  check_problem<float>(p, 40, 30, 48, 1.0, 0.0, true, 1e-5);
  check_problem<double>(p, 40, 30, 48, 1.0, 0.0, true, 1e-12);
}

TEST_CASE("gemm_batched: strided batches (attention's q k^T on views of one qkv buffer) and broadcast", "[gemm]") {
  // q, k: [B, H, T, D] views of a [B, T, 3C] buffer (C = H * D), as CausalSelfAttention has them.
  const int64_t B = 2, H = 3, T = 5, D = 4, C = H * D;
  StridedGemm p;
  p.m = T;
  p.n = T;
  p.k = D;
  p.batch_dims = 2;
  p.batch = {B, H};
  p.a = {T * 3 * C, D, 3 * C, 1};      // q
  p.b = {T * 3 * C, D, 1, 3 * C};      // k^T (k's offset C is added below)
  p.c = {H * T * T, T * T, T, 1};
  std::vector<float> qkv = values<float>(static_cast<size_t>(B * T * 3 * C), 0.3), out(static_cast<size_t>(B * H * T * T));
  std::vector<double> want = naive<float>(p, 1.0, qkv.data(), qkv.data() + C, 0.0, nullptr, nullptr);
  gemm_batched<float>(p, 1.0f, qkv.data(), qkv.data() + C, 0.0f, out.data());
  std::vector<double> got = read(p, out.data());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-5));

  // A broadcast operand (batch stride 0) and a bias on a batched product.
  StridedGemm q = plain(4, 3, 6, false, false);
  q.batch_dims = 1;
  q.batch = {5};
  q.a = {24, 6, 1};
  q.b = {0, 3, 1};
  q.c = {12, 3, 1};
  check_problem<float>(q, 5 * 24, 18, 5 * 12, 1.0, 0.0, false, 1e-5);
  check_problem<float>(q, 5 * 24, 18, 5 * 12, 1.0, 0.0, true, 1e-5);
  check_problem<double>(q, 5 * 24, 18, 5 * 12, 1.0, 1.0, false, 1e-12);
}

TEST_CASE("gemm_batched: a batch split between the threads matches double: uneven shares, strided, broadcast, bf16",
          "[gemm]") {
  // Small products in a batch of at least one per thread run split by the outermost batch dim
  // (where oneDNN runs them). Batch [5, 2] on 2 and 3 threads: shares of 3 and 2, or 2, 2 and 1
  // entries; q @ k^T's layout (b transposed), a broadcast b, beta and a bias.
  const int64_t M = 48, N = 40, K = 64;
  StridedGemm p;
  p.m = M;
  p.n = N;
  p.k = K;
  p.batch_dims = 2;
  p.batch = {5, 2};
  p.a = {2 * M * K, M * K, K, 1};
  p.b = {2 * N * K, N * K, 1, K};
  p.c = {2 * M * N, M * N, N, 1};
  StridedGemm broadcast = p;
  broadcast.b = {0, N * K, 1, K};
  const int before = omp_get_max_threads();
  for (int threads : {2, 3}) {
    INFO(threads << " threads");
    omp_set_num_threads(threads);
    check_problem<float>(p, 10 * M * K, 10 * N * K, 10 * M * N, 1.0, 0.0, false, 1e-4);
    check_problem<float>(p, 10 * M * K, 10 * N * K, 10 * M * N, 0.5, 1.0, false, 1e-4);
    check_problem<float>(broadcast, 10 * M * K, 2 * N * K, 10 * M * N, 1.0, 0.0, true, 1e-4);
    check_problem<BFloat16>(p, 10 * M * K, 10 * N * K, 10 * M * N, 1.0, 0.0, false, 1e-4);
    check_problem<BFloat16>(broadcast, 10 * M * K, 2 * N * K, 10 * M * N, 1.0, 0.0, true, 1e-4);
  }
  omp_set_num_threads(before);
}

TEST_CASE("gemm_batched: k = 0 gives beta * c (+ bias); m = 0 or n = 0 writes nothing", "[gemm]") {
  StridedGemm p = plain(2, 3, 0, false, false);
  p.a = {1, 1};
  p.b = {3, 1};
  check_problem<float>(p, 1, 1, 6, 1.0, 0.0, false, 0);
  check_problem<float>(p, 1, 1, 6, 1.0, 0.5, false, 1e-7);
  check_problem<float>(p, 1, 1, 6, 1.0, 0.0, true, 0);
  check_problem<BFloat16>(p, 1, 1, 6, 1.0, 0.0, true, 0);
  std::vector<float> c = {7.0f};
  gemm_batched<float>(plain(0, 3, 2, false, false), 1.0f, nullptr, nullptr, 0.0f, c.data());
  CHECK(c[0] == 7.0f);
}

TEST_CASE("gemm_batched: bf16 accumulates in float and rounds once", "[gemm]") {
  for (bool ta : {false, true}) {
    // Inputs are bf16 (read exactly by the reference); the result is rounded once to bf16.
    check_problem<BFloat16>(plain(9, 7, 64, ta, !ta), 9 * 64, 64 * 7, 63, 1.0, 0.0, false, 1e-4);
    check_problem<BFloat16>(plain(9, 7, 64, ta, !ta), 9 * 64, 64 * 7, 63, 1.0, 0.0, true, 1e-4);
  }
  std::vector<BFloat16> a(300, BFloat16(1.0f)), b(300, BFloat16(1.0f)), c(1);
  gemm_batched<BFloat16>(plain(1, 1, 300, false, false), BFloat16(1.0f), a.data(), b.data(), BFloat16(0.0f), c.data());
  CHECK(float(c[0]) == 300.0f);  // a bf16 accumulator would stop at 256
}

TEST_CASE("gemm_batched: where bf16 products widen, a bf16 product is the float GEMM of its widened operands, rounded once",
          "[gemm]") {
  using remat::kernels::cpu::bf16_products_widen;
  // a 2-D product (a transposed, a bias) and a batched one at sizes above the small-product bound
  for (int batch : {1, 4}) {
    StridedGemm p = plain(96, 80, 136, true, false);
    if (batch > 1) {
      p.batch_dims = 1;
      p.batch[0] = batch;
      p.a = {96 * 136, 1, 96};
      p.b = {136 * 80, 80, 1};
      p.c = {96 * 80, 80, 1};
    }
    const size_t na = size_t(batch) * 96 * 136, nb = size_t(batch) * 136 * 80, nc = size_t(batch) * 96 * 80;
    std::vector<BFloat16> a = values<BFloat16>(na, 0.3), b = values<BFloat16>(nb, 0.9), bias = values<BFloat16>(80, 1.7);
    std::vector<BFloat16> c(nc);
    const BFloat16* bias_or_null = batch == 1 ? bias.data() : nullptr;
    gemm_batched<BFloat16>(p, BFloat16(1.0f), a.data(), b.data(), BFloat16(0.0f), c.data(), bias_or_null);
    std::vector<float> af(na), bf(nb), cf(nc), biasf(80);
    for (size_t i = 0; i < na; ++i) af[i] = float(a[i]);
    for (size_t i = 0; i < nb; ++i) bf[i] = float(b[i]);
    for (size_t i = 0; i < 80; ++i) biasf[i] = float(bias[i]);
    gemm_batched<float>(p, 1.0f, af.data(), bf.data(), 0.0f, cf.data(), batch == 1 ? biasf.data() : nullptr);
    size_t same = 0;
    for (size_t i = 0; i < nc; ++i) {
      same += BFloat16(cf[i]).bits == c[i].bits;
      CHECK(float(c[i]) == Approx(cf[i]).epsilon(1.0 / 256).margin(1e-3));  // either path: f32 accumulation, one rounding
    }
    INFO("batch " << batch << ", widen " << bf16_products_widen());
    if (bf16_products_widen()) CHECK(same == nc);  // the very float GEMM: the same bits
  }
}

TEST_CASE("gemm_batched: the same problem gives the same bits wherever its operands live", "[gemm]") {
  StridedGemm p = plain(96, 80, 200, true, false);
  std::vector<float> a = values<float>(96 * 200, 0.2), b = values<float>(200 * 80, 0.4);
  std::vector<float> a2(a.size() + 3), b2(b.size() + 5), c1(96 * 80), c2(96 * 80 + 1);
  std::memcpy(a2.data() + 3, a.data(), a.size() * sizeof(float));  // differently aligned copies
  std::memcpy(b2.data() + 5, b.data(), b.size() * sizeof(float));
  for (bool ta : {false, true}) {
    p = plain(96, 80, 200, ta, false);
    gemm_batched<float>(p, 1.0f, a.data(), b.data(), 0.0f, c1.data());
    gemm_batched<float>(p, 1.0f, a2.data() + 3, b2.data() + 5, 0.0f, c2.data() + 1);
    CHECK(std::memcmp(c1.data(), c2.data() + 1, c1.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("gemm: the 2-D entry point matches double, below and above the small-product bound", "[gemm]") {
  // m n k <= 2^20 runs on OpenBLAS (or Eigen), a larger product on oneDNN: both against double,
  // with leading dimensions wider than the rows (flash attention's blocks), alpha and beta.
  struct Case {
    int64_t m, n, k;
  };
  for (Case s : {Case{32, 128, 16}, Case{3, 5, 4}, Case{128, 128, 96}}) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        INFO(s.m << " x " << s.n << " x " << s.k << ", trans_a " << ta << ", trans_b " << tb);
        const int64_t lda = (ta ? s.m : s.k) + 3, ldb = (tb ? s.k : s.n) + 5, ldc = s.n + 7;
        const int64_t a_rows = ta ? s.k : s.m, b_rows = tb ? s.n : s.k;
        std::vector<float> a = values<float>(size_t(a_rows * lda), 0.1), b = values<float>(size_t(b_rows * ldb), 0.9);
        std::vector<float> c = values<float>(size_t(s.m * ldc), 2.3);
        const std::vector<float> c0 = c;
        gemm<float>(ta, tb, s.m, s.n, s.k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(), ldc);
        for (int64_t i = 0; i < s.m; ++i)
          for (int64_t j = 0; j < s.n; ++j) {
            double acc = 0;
            for (int64_t q = 0; q < s.k; ++q)
              acc += double(ta ? a[q * lda + i] : a[i * lda + q]) * double(tb ? b[j * ldb + q] : b[q * ldb + j]);
            const double want = 0.5 * acc + 2.0 * double(c0[i * ldc + j]);
            CHECK(double(c[i * ldc + j]) == Approx(want).epsilon(0).margin(1e-4));
          }
        for (int64_t i = 0; i < s.m; ++i)  // the padding between rows untouched
          for (int64_t j = s.n; j < ldc; ++j) CHECK(c[i * ldc + j] == c0[i * ldc + j]);
      }
  }
}

TEST_CASE("gemm_batched: errors name the problem", "[gemm]") {
  float x = 1.0f;
  StridedGemm p = plain(2, 2, 2, false, false);
  p.batch_dims = 5;
  REQUIRE_THROWS_AS(gemm_batched<float>(p, 1.0f, &x, &x, 0.0f, &x), remat::Error);
  REQUIRE_THROWS_WITH(gemm_batched<float>(p, 1.0f, &x, &x, 0.0f, &x),
                      Contains("gemm_batched") && Contains("5 batch dims") && Contains("at most 4"));
  REQUIRE_THROWS_WITH(gemm_batched<float>(plain(2, 2, 2, false, false), 1.0f, &x, &x, 1.0f, &x, &x),
                      Contains("gemm_batched") && Contains("bias needs alpha = 1 and beta = 0") && Contains("1 and 1"));
  StridedGemm bad = plain(2, 2, 2, false, false);
  bad.a = {4, 2};  // neither rows nor columns contiguous
  std::vector<double> buf(16, 1.0);
  REQUIRE_THROWS_WITH(gemm_batched<double>(bad, 1.0, buf.data(), buf.data(), 0.0, buf.data()),
                      Contains("gemm_batched") && Contains("operand a has no unit stride") && Contains("row stride 4") &&
                          Contains("column stride 2"));
}
