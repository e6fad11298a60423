// Tests nn/optim/clip_grad.cpp: clip_grad_norm_ with PyTorch's semantics (total norm over all
// gradients, clip_coef = max_norm / (total + 1e-6) clamped to 1, always applied).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::check_values;

TEST_CASE("clip_grad_norm_ returns the 2-norm of all gradients and scales them down", "[optim][clip_grad]") {
  Tensor a = zeros({2}, kDouble).requires_grad_(true);
  Tensor b = zeros({1}, kDouble).requires_grad_(true);
  Tensor none = zeros({4}, kDouble).requires_grad_(true);  // no gradient: skipped
  a.set_grad(from_vector({3.0, 4.0}, {2}, kDouble));
  b.set_grad(from_vector({12.0}, {1}, kDouble));
  Tensor total = nn::utils::clip_grad_norm_({a, b, none}, 6.5);
  // sqrt(9 + 16 + 144) = 13; clip_coef = 6.5 / (13 + 1e-6)
  CHECK(total.dim() == 0);
  CHECK(total.item() == Approx(13.0).epsilon(1e-15));
  const double coef = 6.5 / (13.0 + 1e-6);
  check_values(a.grad(), {3 * coef, 4 * coef}, 1e-15);
  check_values(b.grad(), {12 * coef}, 1e-15);
  CHECK_FALSE(none.grad().defined());
}

TEST_CASE("clip_grad_norm_ clamps the coefficient to 1 (gradients within the norm barely change)", "[optim][clip_grad]") {
  Tensor a = zeros({2}, kDouble).requires_grad_(true);
  a.set_grad(from_vector({3.0, 4.0}, {2}, kDouble));
  Tensor g = a.grad();
  Tensor total = nn::utils::clip_grad_norm_(a, 10.0);
  CHECK(total.item() == Approx(5.0).epsilon(1e-15));
  // 10 / (5 + 1e-6) > 1, clamped to 1: multiplied in place by exactly 1.
  CHECK(a.grad().is_same(g));
  check_values(a.grad(), {3.0, 4.0}, 0.0);
  // max_norm just below the norm: the coefficient is max_norm / (total + 1e-6), not 1.
  nn::utils::clip_grad_norm_(a, 5.0);
  check_values(a.grad(), {3.0 * 5.0 / (5.0 + 1e-6), 4.0 * 5.0 / (5.0 + 1e-6)}, 1e-15);
}

TEST_CASE("clip_grad_norm_ with other norm types", "[optim][clip_grad]") {
  const double inf = std::numeric_limits<double>::infinity();
  auto make = [] {
    Tensor a = zeros({3}, kDouble).requires_grad_(true);
    Tensor b = zeros({2}, kDouble).requires_grad_(true);
    a.set_grad(from_vector({1.0, -2.0, 2.0}, {3}, kDouble));
    b.set_grad(from_vector({-6.0, 0.5}, {2}, kDouble));
    return std::vector<Tensor>{a, b};
  };
  std::vector<Tensor> ps = make();
  CHECK(nn::utils::clip_grad_norm_(ps, 100.0, 1.0).item() == Approx(11.5).epsilon(1e-15));
  ps = make();
  CHECK(nn::utils::clip_grad_norm_(ps, 100.0, inf).item() == 6.0);
  ps = make();
  // (1 + 8 + 8 + 216 + 0.125)^(1/3): the 3-norm of the per-tensor 3-norms is the 3-norm of all
  const double three = std::pow(1.0 + 8.0 + 8.0 + 216.0 + 0.125, 1.0 / 3.0);
  CHECK(nn::utils::clip_grad_norm_(ps, 1.0, 3.0).item() == Approx(three).epsilon(1e-14));
  check_values(ps[1].grad(), {-6.0 / (three + 1e-6), 0.5 / (three + 1e-6)}, 1e-14);
}

TEST_CASE("clip_grad_norm_ on float32 gradients keeps their dtype", "[optim][clip_grad]") {
  Tensor a = zeros({2}, kFloat).requires_grad_(true);
  a.set_grad(from_vector({3.0, 4.0}, {2}, kFloat));
  Tensor total = nn::utils::clip_grad_norm_(a, 1.0);
  CHECK(total.dtype() == kFloat);
  CHECK(a.grad().dtype() == kFloat);
  check_values(a.grad(), {0.6, 0.8}, 1e-6);
}

TEST_CASE("clip_grad_norm_ without gradients returns 0", "[optim][clip_grad]") {
  Tensor a = zeros({2}, kDouble).requires_grad_(true);
  Tensor total = nn::utils::clip_grad_norm_(a, 1.0);
  CHECK(total.item() == 0.0);
  CHECK_FALSE(a.grad().defined());
}

TEST_CASE("clip_grad_norm_ errors", "[optim][clip_grad]") {
  Tensor a = zeros({2}, kDouble).requires_grad_(true);
  a.set_grad(from_vector({std::numeric_limits<double>::infinity(), 1.0}, {2}, kDouble));
  REQUIRE_THROWS_WITH(nn::utils::clip_grad_norm_(a, 1.0, 2.0, /*error_if_nonfinite=*/true),
                      Contains("The total norm of order 2 for gradients from `parameters` is non-finite"));
  // Without the check, PyTorch scales by the non-finite coefficient anyway: 1 / inf -> 0 and inf * 0 = NaN.
  Tensor total = nn::utils::clip_grad_norm_(a, 1.0);
  CHECK(std::isinf(total.item()));
  std::vector<double> g = a.grad().to_vector();
  CHECK(std::isnan(g[0]));
  CHECK(g[1] == 0.0);
  REQUIRE_THROWS_WITH(nn::utils::clip_grad_norm_(a, 1.0, 0.0), Contains("norm_type must be positive or inf, got 0"));
  REQUIRE_THROWS_WITH(nn::utils::clip_grad_norm_(a, 1.0, -2.0), Contains("norm_type must be positive or inf, got -2"));
}
