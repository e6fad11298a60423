// Tests nn/normalization.cpp: LayerNorm and RMSNorm forward against their formulas, parameters
// and options.
#include <catch2/catch.hpp>
#include <cmath>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using remat::testing::check_values;
using remat::testing::seeded_randn;

TEST_CASE("LayerNorm starts as weight = 1, bias = 0 and normalises the last dim", "[normalization]") {
  nn::LayerNorm ln(4, 1e-5, true, true, kDouble);
  check_values(ln.weight, {1, 1, 1, 1});
  check_values(ln.bias, {0, 0, 0, 0});
  CHECK(ln.eps == 1e-5);
  // x = [1, 2, 3, 4]: mean 2.5, biased variance 1.25
  const double r = 1.0 / std::sqrt(1.25 + 1e-5);
  check_values(ln(from_vector({1, 2, 3, 4}, {1, 4}, kDouble)), {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r});
  {
    autograd::NoGradGuard no_grad;
    copy_(ln.weight, from_vector({1, 2, 3, 4}, {4}, kDouble));
    copy_(ln.bias, from_vector({0, 0, 1, -1}, {4}, kDouble));
  }
  check_values(ln(from_vector({1, 2, 3, 4}, {4}, kDouble)), {-1.5 * r, -1.0 * r, 1.5 * r + 1, 6 * r - 1});
}

TEST_CASE("LayerNorm over [B, T, C] normalises each row; options drop parameters", "[normalization]") {
  nn::LayerNorm ln(8, 1e-5, true, true, kDouble);
  Tensor x = seeded_randn({2, 3, 8}, 5);
  Tensor y = ln(x);
  CHECK(y.sizes() == Shape{2, 3, 8});
  Tensor row_mean = mean(y, {2});
  Tensor row_var = mean(mul(y, y), {2});
  CHECK(remat::testing::max_abs_diff(row_mean, zeros({2, 3}, kDouble)) < 1e-12);
  // variance v / (v + eps) per row: within eps of 1
  CHECK(remat::testing::max_abs_diff(row_var, ones({2, 3}, kDouble)) < 1e-4);

  nn::LayerNorm plain(8, 1e-5, /*elementwise_affine=*/false);
  CHECK(plain.named_parameters().empty());
  nn::LayerNorm no_bias(8, 1e-5, true, /*bias=*/false);
  REQUIRE(no_bias.named_parameters().size() == 1);
  CHECK(no_bias.named_parameters()[0].first == "weight");
}

TEST_CASE("RMSNorm is x / sqrt(mean(x^2) + eps) * weight", "[normalization]") {
  nn::RMSNorm rms(4, 1e-6, true, kDouble);
  check_values(rms.weight, {1, 1, 1, 1});
  CHECK(rms.eps == 1e-6);
  // mean(x^2) = (1 + 4 + 9 + 16) / 4 = 7.5
  const double r = 1.0 / std::sqrt(7.5 + 1e-6);
  check_values(rms(from_vector({1, 2, 3, 4}, {1, 4}, kDouble)), {r, 2 * r, 3 * r, 4 * r});
  {
    autograd::NoGradGuard no_grad;
    copy_(rms.weight, from_vector({2, 0, -1, 1}, {4}, kDouble));
  }
  check_values(rms(from_vector({1, 2, 3, 4}, {4}, kDouble)), {2 * r, 0, -3 * r, 4 * r});
  CHECK(nn::RMSNorm(4, 1e-6, /*elementwise_affine=*/false).named_parameters().empty());
}

TEST_CASE("LayerNorm and RMSNorm pass gradients to their parameters", "[normalization]") {
  nn::LayerNorm ln(3, 1e-5, true, true, kDouble);
  nn::RMSNorm rms(3, 1e-6, true, kDouble);
  Tensor x = seeded_randn({5, 3}, 9);
  sum(mul(ln(x), from_vector({1, 2, 3}, {3}, kDouble))).backward();
  // d/d bias of sum(c * y) = 5 * c;  d/d weight = c * sum over rows of x_hat
  check_values(ln.bias.grad(), {5, 10, 15});
  REQUIRE(ln.weight.grad().defined());
  sum(rms(x)).backward();
  REQUIRE(rms.weight.grad().defined());
  CHECK(rms.weight.grad().sizes() == Shape{3});
}
