// Tests nn/init.cpp: fan_in, the in-place initialisers under no-grad, Linear's kaiming bound.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>

#include "remat.h"

using namespace remat;
using Catch::Contains;

TEST_CASE("fan_in is size(1) times the receptive field", "[init]") {
  CHECK(nn::init::fan_in(empty({7, 5})) == 5);
  CHECK(nn::init::fan_in(empty({8, 3, 4, 2})) == 24);
  REQUIRE_THROWS_WITH(nn::init::fan_in(empty({5})),
                      Contains("Fan in can not be computed for tensor with fewer than 2 dimensions (shape [5])"));
}

TEST_CASE("init functions fill a parameter in place without recording history", "[init]") {
  Tensor w = zeros({64, 16}).requires_grad_(true);
  Tensor& r = nn::init::kaiming_uniform_linear_(w, nullptr);
  CHECK(&r == &w);
  CHECK(w.is_leaf());
  CHECK(w.grad_fn() == nullptr);
  std::vector<double> v = w.to_vector();
  const double bound = 1.0 / std::sqrt(16.0);
  CHECK(*std::max_element(v.begin(), v.end()) <= bound);
  CHECK(*std::min_element(v.begin(), v.end()) >= -bound);
  CHECK(*std::max_element(v.begin(), v.end()) > 0.9 * bound);

  Generator g1(4), g2(4);
  Tensor a = zeros({100}).requires_grad_(true), b = zeros({100}).requires_grad_(true);
  nn::init::normal_(a, 1.0, 0.5, &g1);
  nn::init::normal_(b, 1.0, 0.5, &g2);
  CHECK(equal(a, b));
  nn::init::uniform_(a, 2.0, 3.0, &g1);
  for (double x : a.to_vector()) {
    CHECK(x >= 2.0);
    CHECK(x <= 3.0);
  }
}
