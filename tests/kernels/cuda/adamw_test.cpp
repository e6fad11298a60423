// Tests kernels/cuda/adamw.{h,cu}: one AdamW step against torch.optim.AdamW's formula on the host.
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
