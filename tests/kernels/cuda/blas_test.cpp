// Tests kernels/cuda/blas.{h,cpp}: the TF32 switch, status names, and GEMM layouts against a
// host reference.
#include <catch2/catch.hpp>

#include <cublas_v2.h>

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
