// Tests kernels/cuda/blas.{h,cpp}: the TF32 switch, status names, and GEMM layouts against a
// host reference: every transpose combination, leading dimensions wider than the matrix, alpha
// and beta, sizes of 1, about 32 and about 1024, strided and broadcast batches, every floating
// dtype.
#include <catch2/catch.hpp>

#include <cublas_v2.h>

#include <algorithm>
#include <tuple>
#include <vector>

#include "kernels/cuda/blas.h"
#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;
namespace kc = remat::kernels::cuda;

TEST_CASE("TF32 is off by default and can be switched", "[blas]") {
  CHECK_FALSE(kc::allow_tf32());
  kc::set_allow_tf32(true);
  CHECK(kc::allow_tf32());
  kc::set_allow_tf32(false);
  CHECK_FALSE(kc::allow_tf32());
  CHECK(std::string(kc::cublas_status_name(CUBLAS_STATUS_INVALID_VALUE)) == "CUBLAS_STATUS_INVALID_VALUE");
}

TEST_CASE("gemm: every transpose combination against a host product", "[blas][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const int64_t m = 37, n = 19, k = 23;
  Tensor a = testing::random_cpu({m, k}, kDouble, 1), b = testing::random_cpu({k, n}, kDouble, 2);
  std::vector<double> av = a.to_vector(), bv = b.to_vector(), expected(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) expected[i * n + j] += av[i * k + p] * bv[p * n + j];
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      // A stored as [m, k] or, transposed, as [k, m]; same for B.
      Tensor as = (ta ? a.t().contiguous() : a).to(testing::cuda0());
      Tensor bs = (tb ? b.t().contiguous() : b).to(testing::cuda0());
      Tensor c = zeros({m, n}, TensorOptions().dtype(kDouble).device(testing::cuda0()));
      kc::gemm(kDouble, ta, tb, m, n, k, 1.0, as.data_ptr(), ta ? m : k, bs.data_ptr(), tb ? k : n, 0.0, c.data_ptr(),
               n, nullptr);
      INFO("trans_a " << ta << " trans_b " << tb);
      CHECK(testing::compare(c.to_vector(), expected, testing::kF64) == "");
    }
  }
}

namespace {
// C = alpha op(A) op(B) + beta C0 on the host, row-major, from operands stored as gemm reads them.
std::vector<double> host_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha,
                              const std::vector<double>& a, int64_t lda, const std::vector<double>& b, int64_t ldb,
                              double beta, const std::vector<double>& c0, int64_t ldc) {
  std::vector<double> c = c0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += a[static_cast<size_t>(ta ? p * lda + i : i * lda + p)] * b[static_cast<size_t>(tb ? j * ldb + p : p * ldb + j)];
      double& out = c[static_cast<size_t>(i * ldc + j)];
      out = alpha * s + (beta == 0 ? 0.0 : beta * out);
    }
  return c;
}
}  // namespace

TEST_CASE("gemm and gemm_strided_batched: sizes, leading dims, alpha, beta and dtypes against a host product",
          "[blas][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> sizes = {{1, 1, 1}, {31, 33, 1}, {33, 1, 31}, {3, 1025, 2},
                                                                    {1023, 2, 3}, {2, 3, 1025}};
  uint64_t seed = 0;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf}) {
    for (const auto& [m, n, k] : sizes) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          for (int64_t pad : {0, 3}) {  // leading dims wider than the rows
            const int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
            const int64_t arows = ta ? k : m, brows = tb ? n : k;
            const int64_t batch = 2;
            // Batched operands one after another; B broadcast (stride 0) when pad is set.
            const int64_t sa = arows * lda, sb = pad > 0 ? 0 : brows * ldb, sc = m * ldc;
            // Positive operands: no cancellation in the sums, so a float result is within float
            // rounding of the exact one.
            Tensor a = testing::random_cpu({batch * sa}, dt, ++seed, 0.0, 1.0);
            Tensor b = testing::random_cpu({brows * ldb * (pad > 0 ? 1 : batch)}, dt, ++seed, 0.0, 1.0);
            Tensor c0 = testing::random_cpu({batch * sc}, dt, ++seed);
            const double alpha = 1.5, beta = pad > 0 ? 0.5 : 0.0;
            std::vector<double> av = a.to_vector(), bv = b.to_vector(), cv = c0.to_vector(), expected = cv;
            for (int64_t i = 0; i < batch; ++i) {
              std::vector<double> ai(av.begin() + i * sa, av.begin() + (i + 1) * sa);
              std::vector<double> bi(bv.begin() + i * sb, bv.begin() + i * sb + brows * ldb);
              std::vector<double> ci(cv.begin() + i * sc, cv.begin() + (i + 1) * sc);
              std::vector<double> r = host_gemm(ta, tb, m, n, k, alpha, ai, lda, bi, ldb, beta, ci, ldc);
              std::copy(r.begin(), r.end(), expected.begin() + i * sc);
            }
            Tensor ga = a.to(testing::cuda0()), gb = b.to(testing::cuda0()), gc = c0.to(testing::cuda0());
            kc::gemm_strided_batched(dt, ta, tb, m, n, k, alpha, ga.data_ptr(), lda, sa, gb.data_ptr(), ldb, sb, beta,
                                     gc.data_ptr(), ldc, sc, batch, nullptr);
            INFO(toString(dt) << " " << m << "x" << n << "x" << k << " trans " << ta << tb << " pad " << pad);
            // the padding between rows is never written
            CHECK(testing::compare(gc.to_vector(), from_vector(expected, {batch * sc}, dt).to_vector(),
                                   testing::reduction_tolerance(dt)) == "");
            // one GEMM: the first batch entry
            Tensor one = c0.to(testing::cuda0());
            kc::gemm(dt, ta, tb, m, n, k, alpha, ga.data_ptr(), lda, gb.data_ptr(), ldb, beta, one.data_ptr(), ldc,
                     nullptr);
            std::vector<double> first(expected.begin(), expected.begin() + sc), got = one.to_vector();
            got.resize(static_cast<size_t>(sc));
            CHECK(testing::compare(got, from_vector(first, {sc}, dt).to_vector(), testing::reduction_tolerance(dt)) == "");
          }
        }
      }
    }
  }
}
