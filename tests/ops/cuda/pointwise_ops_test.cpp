// Tests ops/cuda/pointwise_ops.cpp: addcmul_, addcdiv_, lerp_, maximum and minimum on CUDA
// against the CPU kernels (broadcast operands, every floating dtype; every dtype for
// maximum/minimum), NaN propagation and errors.
#include <catch2/catch.hpp>

#include <limits>

#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("addcmul_, addcdiv_ and lerp_ on CUDA match the CPU", "[pointwise_ops][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 1;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf}) {
    Tensor self = random_cpu({17, 33}, dt, ++seed), t1 = random_cpu({33}, dt, ++seed);
    Tensor t2 = random_cpu({17, 1}, dt, ++seed, 0.5, 2.0), end = random_cpu({17, 33}, dt, ++seed);
    INFO(toString(dt));
    // Each update starts from the same self, so differences cannot compound.
    Tensor c = self.clone(), g = self.to(cuda0());
    const int64_t v = g._version();
    addcmul_(c, t1, t2, 0.3);
    addcmul_(g, t1.to(cuda0()), t2.to(cuda0()), 0.3);
    CHECK(g._version() == v + 1);
    CHECK(compare(g, c, elementwise_tolerance(dt)) == "");
    c = self.clone();
    g = self.to(cuda0());
    addcdiv_(c, t1, t2, -1.7);
    addcdiv_(g, t1.to(cuda0()), t2.to(cuda0()), -1.7);
    CHECK(compare(g, c, elementwise_tolerance(dt)) == "");
    for (double w : {0.1, 0.5, 0.9, 1.0}) {
      c = self.clone();
      g = self.to(cuda0());
      lerp_(c, end, w);
      lerp_(g, end.to(cuda0()), w);
      INFO("weight " << w);
      CHECK(compare(g, c, elementwise_tolerance(dt)) == "");
    }
  }
  Tensor s = zeros({4}, TensorOptions().device(cuda0()));
  REQUIRE_THROWS_WITH(addcmul_(s, zeros({2, 4}, TensorOptions().device(cuda0())), s),
                      Catch::Contains("doesn't match the broadcast shape"));
}

TEST_CASE("maximum and minimum on CUDA match the CPU and propagate NaN", "[pointwise_ops][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf, kLong, kBool}) {
    Tensor a = from_vector({0, 1, 5, -3, 2, 1}, {2, 3}, dt), b = from_vector({1, 1, -4}, {3}, dt);
    INFO(toString(dt));
    CHECK(equal(maximum(a.to(cuda0()), b.to(cuda0())).to(Device(kCPU)), maximum(a, b)));
    CHECK(equal(minimum(a.to(cuda0()), b.to(cuda0())).to(Device(kCPU)), minimum(a, b)));
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = from_vector({nan, 1.0, 2.0}, {3}, kFloat), b = from_vector({0.0, nan, 3.0}, {3}, kFloat);
  std::vector<double> m = maximum(a.to(cuda0()), b.to(cuda0())).to_vector();
  CHECK(std::isnan(m[0]));
  CHECK(std::isnan(m[1]));
  CHECK(m[2] == 3.0);
  Tensor mixed = maximum(a.to(cuda0()), from_vector({1, 2, 3}, {3}, kDouble).to(cuda0()));
  CHECK(mixed.dtype() == kDouble);
}
