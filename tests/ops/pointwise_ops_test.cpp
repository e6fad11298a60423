// Tests addcmul_, addcdiv_, lerp_, maximum, minimum (rows of ops/pointwise.def).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::check_values;
using remat::testing::meta_empty;
using remat::testing::seeded_randn;

namespace {
const double kNaN = std::numeric_limits<double>::quiet_NaN();
}

TEST_CASE("addcmul_ and addcdiv_ update self in place", "[pointwise_ops]") {
  for (ScalarType dt : {kFloat, kDouble}) {
    Tensor t1 = from_vector({4, 5, 6}, {3}, dt), t2 = from_vector({2, 4, 8}, {3}, dt);
    Tensor a = from_vector({1, 2, 3}, {3}, dt);
    int64_t v0 = a._version();
    Tensor& r = addcmul_(a, t1, t2, 0.5);
    CHECK(&r == &a);
    CHECK(a._version() == v0 + 1);
    check_values(a, {1 + 0.5 * 8, 2 + 0.5 * 20, 3 + 0.5 * 48});

    Tensor b = from_vector({1, 2, 3}, {3}, dt);
    addcdiv_(b, t1, t2, 0.5);
    check_values(b, {1 + 0.5 * 2, 2 + 0.5 * 1.25, 3 + 0.5 * 0.75});

    Tensor c = from_vector({1, 2, 3}, {3}, dt);
    addcmul_(c, t1, t2);  // value defaults to 1
    check_values(c, {9, 22, 51});
  }
}

TEST_CASE("addcmul_ broadcasts its operands to self and converts their dtype", "[pointwise_ops]") {
  Tensor self = zeros({2, 3}, kDouble);
  Tensor row = from_vector({1, 2, 3}, {3}, kFloat);     // [3] -> [2, 3]
  Tensor col = from_vector({10, 100}, {2, 1}, kDouble);  // [2, 1] -> [2, 3]
  addcmul_(self, row, col, 2.0);
  check_values(self, {20, 40, 60, 200, 400, 600});

  // A strided (transposed) self is written through its strides.
  Tensor base = zeros({3, 2}, kDouble);
  Tensor view = transpose(base, 0, 1);  // [2, 3], non-contiguous
  addcdiv_(view, ones({2, 3}, kDouble), full({2, 3}, 4.0, kDouble), 1.0);
  check_values(base, std::vector<double>(6, 0.25));
}

TEST_CASE("lerp_ follows PyTorch's two formulas around weight 0.5", "[pointwise_ops]") {
  Tensor end = from_vector({10, 0, 2}, {3}, kDouble);
  Tensor a = from_vector({0, 10, -2}, {3}, kDouble);
  lerp_(a, end, 0.25);
  check_values(a, {2.5, 7.5, -1});
  Tensor b = from_vector({0, 10, -2}, {3}, kDouble);
  lerp_(b, end, 0.75);
  check_values(b, {7.5, 2.5, 1});
  // weight 1 gives end exactly (the end - (end - self) * (1 - w) branch), even where the
  // self + w * (end - self) form would round.
  Tensor c = from_vector({0.1, 1e20, -3.3}, {3}, kFloat);
  Tensor e = from_vector({0.7, 1.0, 2.2}, {3}, kFloat);
  lerp_(c, e, 1.0);
  CHECK(equal(c, e));
}

TEST_CASE("maximum and minimum: broadcasting, promotion, NaN propagation", "[pointwise_ops]") {
  Tensor a = from_vector({1, kNaN, 3, -1}, {4}, kDouble), b = from_vector({2, 0, 3, -5}, {4}, kDouble);
  std::vector<double> mx = maximum(a, b).to_vector(), mn = minimum(a, b).to_vector();
  CHECK(mx[0] == 2);
  CHECK(std::isnan(mx[1]));
  CHECK(mx[2] == 3);
  CHECK(mx[3] == -1);
  CHECK(mn[0] == 1);
  CHECK(std::isnan(mn[1]));
  CHECK(mn[3] == -5);
  CHECK(std::isnan(maximum(b, a).to_vector()[1]));  // NaN on either side

  Tensor col = from_vector({1, 5}, {2, 1}, kFloat), row = from_vector({3, 4}, {2}, kDouble);
  Tensor m = maximum(col, row);
  CHECK(m.sizes() == Shape{2, 2});
  CHECK(m.dtype() == kDouble);
  check_values(m, {3, 4, 5, 5});
  check_values(minimum(col, row), {1, 1, 3, 4});

  Tensor ia = from_vector({1, -7}, {2}, kLong), ib = from_vector({0, 3}, {2}, kLong);
  CHECK(maximum(ia, ib).dtype() == kLong);
  check_values(maximum(ia, ib), {1, 3});
  check_values(minimum(ia, ib), {0, -7});
}

TEST_CASE("pointwise_ops errors name the op and the values", "[pointwise_ops]") {
  Tensor self = zeros({2}, kDouble);
  REQUIRE_THROWS_WITH(addcmul_(self, ones({2, 2}, kDouble), ones({2}, kDouble)),
                      Contains("aten::addcmul_") && Contains("output with shape [2] doesn't match the broadcast shape [2, 2]"));
  REQUIRE_THROWS_WITH(addcdiv_(self, ones({3}, kDouble), ones({2}, kDouble)),
                      Contains("aten::addcdiv_") && Contains("The size of tensor a (2) must match the size of tensor b (3)"));
  Tensor ints = zeros({2}, kLong);
  REQUIRE_THROWS_WITH(addcmul_(ints, ones({2}, kLong), ones({2}, kLong)),
                      Contains("aten::addcmul_") && Contains("floating point dtype") && Contains("Long"));
  REQUIRE_THROWS_WITH(lerp_(self, ones({3}, kDouble), 0.5), Contains("aten::lerp_") && Contains("[3]"));
  REQUIRE_THROWS_WITH(addcmul_(self, Tensor(), ones({2}, kDouble)), Contains("aten::addcmul_") && Contains("undefined"));
  // Writing into an expanded tensor (several elements at one address) is refused.
  Tensor expanded = zeros({1, 2}, kDouble).expand({3, 2});
  REQUIRE_THROWS_WITH(addcmul_(expanded, ones({3, 2}, kDouble), ones({3, 2}, kDouble)),
                      Contains("aten::addcmul_") && Contains("more than one element of the written-to tensor"));
  REQUIRE_THROWS_WITH(lerp_(expanded, ones({3, 2}, kDouble), 0.5), Contains("aten::lerp_") && Contains("strides [0, 1]"));
  REQUIRE_THROWS_WITH(maximum(ones({2}), ones({3})), Contains("aten::maximum") && Contains("[2] and [3]"));
  REQUIRE_THROWS_WITH(minimum(ones({2}), meta_empty({2})), Contains("aten::minimum") && Contains("same device"));
}

TEST_CASE("pointwise_ops on the Meta device infer shapes without data", "[pointwise_ops]") {
  Tensor self = meta_empty({2, 3});
  int64_t v0 = self._version();
  addcmul_(self, meta_empty({3}), meta_empty({2, 1}), 2.0);
  addcdiv_(self, meta_empty({3}), meta_empty({3}), 2.0);
  lerp_(self, meta_empty({2, 3}), 0.1);
  CHECK(self._version() == v0 + 3);
  Tensor m = maximum(meta_empty({4, 1}), meta_empty({3}, kDouble));
  CHECK(m.is_meta());
  CHECK(m.sizes() == Shape{4, 3});
  CHECK(m.dtype() == kDouble);
  REQUIRE_THROWS_WITH(addcmul_(self, meta_empty({4}), meta_empty({3})), Contains("aten::addcmul_"));
}

TEST_CASE("pointwise_ops are differentiable (gradcheck, gradgradcheck)", "[pointwise_ops][autograd]") {
  Tensor s = seeded_randn({3, 4}, 1).requires_grad_(true);
  Tensor t1 = seeded_randn({3, 4}, 2).requires_grad_(true);
  Tensor t2 = seeded_randn({4}, 3).requires_grad_(true);  // broadcast: its gradient is summed back
  // Away from zero for division.
  Tensor d = add(abs(seeded_randn({4}, 4)), 0.5).detach().requires_grad_(true);

  auto addcmul_fn = [](const std::vector<Tensor>& in) {
    Tensor x = clone(in[0]);
    addcmul_(x, in[1], in[2], 0.7);
    return std::vector<Tensor>{x};
  };
  auto addcdiv_fn = [](const std::vector<Tensor>& in) {
    Tensor x = clone(in[0]);
    addcdiv_(x, in[1], in[2], -1.3);
    return std::vector<Tensor>{x};
  };
  auto lerp_fn = [](const std::vector<Tensor>& in) {
    Tensor x = clone(in[0]);
    lerp_(x, in[1], 0.3);
    return std::vector<Tensor>{x};
  };
  CHECK(autograd::gradcheck(addcmul_fn, {s, t1, t2}));
  CHECK(autograd::gradcheck(addcdiv_fn, {s, t1, d}));
  CHECK(autograd::gradcheck(lerp_fn, {s, t1}));
  CHECK(autograd::gradgradcheck(addcmul_fn, {s, t1, t2}));
  CHECK(autograd::gradgradcheck(addcdiv_fn, {s, t1, d}));

  // Random inputs have no ties: maximum / minimum are smooth there.
  auto max_fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{maximum(in[0], in[1])}; };
  auto min_fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{minimum(in[0], in[1])}; };
  CHECK(autograd::gradcheck(max_fn, {s, t2}));
  CHECK(autograd::gradcheck(min_fn, {s, t2}));
}

TEST_CASE("maximum splits the gradient evenly on ties, as PyTorch does", "[pointwise_ops][autograd]") {
  Tensor a = from_vector({1, 2, 3}, {3}, kDouble).requires_grad_(true);
  Tensor b = from_vector({0, 2, 4}, {3}, kDouble).requires_grad_(true);
  sum(maximum(a, b)).backward();
  check_values(a.grad(), {1, 0.5, 0});
  check_values(b.grad(), {0, 0.5, 1});
  a.set_grad(Tensor());
  b.set_grad(Tensor());
  sum(minimum(a, b)).backward();
  check_values(a.grad(), {0, 0.5, 1});
  check_values(b.grad(), {1, 0.5, 0});
}

TEST_CASE("in-place updates of a leaf that requires grad are refused unless under no_grad", "[pointwise_ops][autograd]") {
  Tensor p = ones({2}, kDouble).requires_grad_(true);
  REQUIRE_THROWS_WITH(addcmul_(p, ones({2}, kDouble), ones({2}, kDouble)),
                      Contains("a leaf Variable that requires grad is being used in an in-place operation") &&
                          Contains("aten::addcmul_"));
  {
    autograd::NoGradGuard no_grad;
    lerp_(p, zeros({2}, kDouble), 0.5);
  }
  check_values(p, {0.5, 0.5});
  CHECK(p.is_leaf());
}
