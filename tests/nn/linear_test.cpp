// Tests nn/linear.cpp: PyTorch's default initialisation bounds, y = x W^T + b, errors, scope.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::check_values;

TEST_CASE("Linear's default init is U(-1/sqrt(in), 1/sqrt(in)) for weight and bias", "[linear]") {
  Generator gen(3);
  nn::Linear lin(16, 256, true, &gen);
  CHECK(lin.weight.sizes() == Shape{256, 16});
  CHECK(lin.bias.sizes() == Shape{256});
  const double bound = 1.0 / std::sqrt(16.0);
  for (const Tensor& t : {lin.weight, lin.bias}) {
    std::vector<double> v = t.to_vector();
    double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
    CHECK(lo >= -bound);
    CHECK(hi <= bound);
    // Uniform over the whole range: the extremes come close to the bounds.
    CHECK(lo < -0.9 * bound);
    CHECK(hi > 0.9 * bound);
  }
  // 4096 weights: the mean of U(-b, b) is 0 with standard error b / sqrt(3 * 4096) ~ 0.0023.
  std::vector<double> w = lin.weight.to_vector();
  double mean = 0;
  for (double x : w) mean += x / static_cast<double>(w.size());
  CHECK(std::abs(mean) < 0.01);
}

TEST_CASE("Linear with the same generator seed initialises identically", "[linear]") {
  Generator g1(42), g2(42), g3(43);
  nn::Linear a(5, 7, true, &g1), b(5, 7, true, &g2), c(5, 7, true, &g3);
  CHECK(equal(a.weight, b.weight));
  CHECK(equal(a.bias, b.bias));
  CHECK_FALSE(equal(a.weight, c.weight));
}

TEST_CASE("Linear's forward is x W^T + b", "[linear]") {
  nn::Linear lin(3, 2, true, nullptr, kDouble);
  {
    autograd::NoGradGuard no_grad;
    copy_(lin.weight, from_vector({1, 2, 3, -1, 0, 0.5}, {2, 3}, kDouble));
    copy_(lin.bias, from_vector({0.25, -2}, {2}, kDouble));
  }
  Tensor x = from_vector({1, 1, 1, 2, 0, -2}, {2, 3}, kDouble);
  // row 0: [1+2+3, -1+0+0.5] + b;  row 1: [2-6, -2-1] + b
  check_values(lin.forward(x), {6.25, -2.5, -3.75, -5});
  // Any leading dims: [2, 1, 3] -> [2, 1, 2]
  Tensor y = lin(reshape(x, {2, 1, 3}));
  CHECK(y.sizes() == Shape{2, 1, 2});
  check_values(y, {6.25, -2.5, -3.75, -5});
  // Gradients: dL/dW = sum over rows of g^T x, dL/db = sum of g, for L = sum(y)
  sum(lin.forward(x)).backward();
  check_values(lin.weight.grad(), {3, 1, -1, 3, 1, -1});
  check_values(lin.bias.grad(), {2, 2});
}

TEST_CASE("Linear without bias", "[linear]") {
  nn::Linear lin(4, 3, /*bias=*/false);
  CHECK_FALSE(lin.bias.defined());
  REQUIRE(lin.named_parameters().size() == 1);
  CHECK(lin.named_parameters()[0].first == "weight");
  Tensor x = ones({2, 4});
  CHECK(allclose(lin.forward(x), matmul(x, transpose(lin.weight, 0, 1))));
}

TEST_CASE("Linear errors", "[linear]") {
  REQUIRE_THROWS_WITH(nn::Linear(0, 3), Contains("Linear: in_features and out_features must be positive (got 0, 3)"));
  REQUIRE_THROWS_WITH(nn::Linear(3, -1), Contains("must be positive (got 3, -1)"));
  nn::Linear lin(3, 2);
  REQUIRE_THROWS_WITH(lin.forward(ones({2, 4})),
                      Contains("Linear: input's last dimension (4, shape [2, 4]) must equal in_features (3)"));
  REQUIRE_THROWS_WITH(lin.forward(Tensor()), Contains("must equal in_features (3)"));
}

TEST_CASE("Linear's forward runs in its scope", "[linear]") {
  struct ScopeRecorder : DispatchMode {
    std::vector<std::string> scopes;
    std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
      scopes.push_back(current_scope());
      return op.call(args);
    }
  };
  nn::Module parent("Parent");
  auto lin = parent.register_module("proj", std::make_shared<nn::Linear>(3, 2));
  auto rec = std::make_shared<ScopeRecorder>();
  Tensor x = ones({1, 3});
  {
    scope outer("net");
    DispatchModeGuard guard(rec);
    lin->forward(x);
  }
  REQUIRE_FALSE(rec->scopes.empty());
  for (const std::string& s : rec->scopes) CHECK(s == "net.proj");
}
