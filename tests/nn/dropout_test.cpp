// Tests nn/dropout.cpp: identity in eval mode, zeros with probability p and scale 1 / (1 - p) in
// training mode, determinism from a generator, errors.
#include <catch2/catch.hpp>
#include <cmath>

#include "remat.h"

using namespace remat;
using Catch::Contains;

TEST_CASE("Dropout in eval mode is the identity", "[dropout]") {
  nn::Dropout drop(0.9);
  drop.eval();
  Tensor x = randn({64, 64});
  CHECK(equal(drop(x), x));
}

TEST_CASE("Dropout in training mode zeroes a fraction p and scales the rest by 1 / (1 - p)", "[dropout]") {
  Generator gen(2024);
  nn::Dropout drop(0.25, &gen);
  REQUIRE(drop.is_training());
  Tensor x = full({100000}, 3.0, kDouble);
  std::vector<double> y = drop(x).to_vector();
  int64_t zeros_seen = 0;
  bool values_ok = true;
  for (double v : y) {
    if (v == 0.0) ++zeros_seen;
    else values_ok = values_ok && v == 3.0 / 0.75;
  }
  CHECK(values_ok);
  // Binomial(100000, 0.25): standard deviation ~137, so +-1000 is over 7 sigma.
  CHECK(std::abs(static_cast<double>(zeros_seen) - 25000.0) < 1000.0);
}

TEST_CASE("Dropout with p = 0 and p = 1", "[dropout]") {
  Tensor x = randn({1000});
  nn::Dropout keep(0.0);
  CHECK(equal(keep(x), x));
  nn::Dropout drop_all(1.0);
  CHECK(allclose(drop_all(x), zeros({1000}), 0.0, 0.0));  // by value: negative inputs give -0
}

TEST_CASE("Dropout's mask comes from its generator and its gradient is mask * scale", "[dropout]") {
  Generator g1(7), g2(7);
  nn::Dropout a(0.5, &g1), b(0.5, &g2);
  Tensor x = ones({256}, kDouble).requires_grad_(true);
  Tensor ya = a(x), yb = b(x);
  CHECK(equal(ya, yb));
  sum(ya).backward();
  // y = x * mask * 2 with x = 1: the gradient of sum(y) equals y itself.
  CHECK(equal(x.grad(), ya.detach()));
}

TEST_CASE("Dropout rejects probabilities outside [0, 1]", "[dropout]") {
  REQUIRE_THROWS_WITH(nn::Dropout(1.5), Contains("dropout probability has to be between 0 and 1, but got 1.5"));
  REQUIRE_THROWS_WITH(nn::Dropout(-0.1), Contains("dropout probability has to be between 0 and 1, but got -0.1"));
}
