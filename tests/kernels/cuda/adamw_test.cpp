// Tests kernels/cuda/adamw.{h,cu}: AdamW steps against torch.optim.AdamW's formula on the host,
// on parameter counts that are not multiples of a block (1, 31, 33, 1023, 1025, 4097), and for
// 16-bit parameters with float moments.
#include <catch2/catch.hpp>

#include <cmath>

#include "kernels/cuda/adamw.h"
#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;
namespace kc = remat::kernels::cuda;

TEST_CASE("adamw_step matches the reference update over several steps", "[adamw][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const int64_t n = 1000;
  const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
  for (ScalarType dt : {kFloat, kDouble}) {
    Tensor p = testing::random_cpu({n}, dt, 3);
    std::vector<double> hp = p.to_vector(), hm(n, 0.0), hv(n, 0.0);
    Tensor dp = p.to(testing::cuda0());
    Tensor m = zeros({n}, TensorOptions().dtype(dt).device(testing::cuda0()));
    Tensor v = zeros({n}, TensorOptions().dtype(dt).device(testing::cuda0()));
    for (int64_t step = 1; step <= 3; ++step) {
      Tensor g = testing::random_cpu({n}, dt, 10 + static_cast<uint64_t>(step));
      std::vector<double> hg = g.to_vector();
      Tensor dg = g.to(testing::cuda0());
      kc::adamw_step(dt, dp.data_ptr(), dg.data_ptr(), m.data_ptr(), v.data_ptr(), n, lr, b1, b2, eps, wd, step,
                     nullptr);
      const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
      for (int64_t i = 0; i < n; ++i) {
        hp[i] *= 1 - lr * wd;
        hm[i] = b1 * hm[i] + (1 - b1) * hg[i];
        hv[i] = b2 * hv[i] + (1 - b2) * hg[i] * hg[i];
        hp[i] -= lr / bc1 * hm[i] / (std::sqrt(hv[i]) / std::sqrt(bc2) + eps);
      }
    }
    INFO(toString(dt));
    CHECK(testing::compare(dp.to_vector(), hp, dt == kDouble ? testing::kF64 : testing::kF32Reduction) == "");
  }
  REQUIRE_THROWS_WITH(kc::adamw_step(kFloat, nullptr, nullptr, nullptr, nullptr, 0, lr, b1, b2, eps, wd, 0, nullptr),
                      Catch::Contains("step counts from 1"));
}

TEST_CASE("adamw_step on every parameter count and dtype matches the reference", "[adamw][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf}) {
    const ScalarType moment_dt = dt == kDouble ? kDouble : kFloat;  // the moments in the accumulation type
    for (int64_t n : {1, 31, 33, 1023, 1025, 4097}) {
      Tensor p = testing::random_cpu({n}, dt, 3);
      std::vector<double> hp = p.to_vector(), hm(static_cast<size_t>(n), 0.0), hv(static_cast<size_t>(n), 0.0);
      Tensor dp = p.to(testing::cuda0());
      Tensor m = zeros({n}, TensorOptions().dtype(moment_dt).device(testing::cuda0()));
      Tensor v = zeros({n}, TensorOptions().dtype(moment_dt).device(testing::cuda0()));
      for (int64_t step = 1; step <= 3; ++step) {
        Tensor g = testing::random_cpu({n}, dt, 10 + static_cast<uint64_t>(step));
        std::vector<double> hg = g.to_vector();
        kc::adamw_step(dt, dp.data_ptr(), g.to(testing::cuda0()).data_ptr(), m.data_ptr(), v.data_ptr(), n, lr, b1, b2,
                       eps, wd, step, nullptr);
        const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
        for (size_t i = 0; i < hp.size(); ++i) {
          hp[i] *= 1 - lr * wd;
          hm[i] = b1 * hm[i] + (1 - b1) * hg[i];
          hv[i] = b2 * hv[i] + (1 - b2) * hg[i] * hg[i];
          hp[i] -= lr / bc1 * hm[i] / (std::sqrt(hv[i]) / std::sqrt(bc2) + eps);
        }
        hp = from_vector(hp, {n}, dt).to_vector();  // the parameter is stored in its dtype after each step
      }
      INFO(toString(dt) << " n " << n);
      const testing::Tolerance tol = dt == kDouble ? testing::kF64 : dt == kFloat ? testing::kF32Reduction : testing::elementwise_tolerance(dt);
      CHECK(testing::compare(dp.to_vector(), hp, tol) == "");
      CHECK(testing::compare(m.to_vector(), hm, dt == kDouble ? testing::kF64 : testing::kF32Reduction) == "");
      CHECK(testing::compare(v.to_vector(), hv, dt == kDouble ? testing::kF64 : testing::kF32Reduction) == "");
    }
  }
}
