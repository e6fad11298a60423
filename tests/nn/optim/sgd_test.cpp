// Tests nn/optim/sgd.cpp: PyTorch's SGD rule step by step, param groups, errors.
//
// The expected values follow torch.optim.SGD's single-tensor rule, evaluated in float64 for a
// 2-element parameter p0 = [1, -2] and the gradient sequence g1 = [0.5, -1], g2 = [0.1, 0.3],
// g3 = [-0.2, 0.4]. For example, lr 0.1, momentum 0.9, dampening 0.1, weight_decay 0.01:
//   step 1: d = g1 + 0.01 p0 = [0.51, -1.02];  buf = d;  p1 = p0 - 0.1 buf = [0.949, -1.898]
//   step 2: d = g2 + 0.01 p1;  buf = 0.9 buf + 0.9 d;  p2 = p1 - 0.1 buf = [0.8932459, -1.8314918]
#include <catch2/catch.hpp>
#include <vector>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::check_values;

namespace {

const std::vector<std::vector<double>> kGrads = {{0.5, -1.0}, {0.1, 0.3}, {-0.2, 0.4}};

// Runs one optimizer step per gradient in kGrads on p = [1, -2]; checks p after each.
void check_trajectory(const optim::SGDOptions& options, const std::vector<std::vector<double>>& expected,
                      ScalarType dtype = kDouble, double epsilon = 1e-14) {
  Tensor p = from_vector({1.0, -2.0}, {2}, dtype).requires_grad_(true);
  optim::SGD opt({p}, options);
  for (size_t k = 0; k < expected.size(); ++k) {
    INFO("step " << k + 1);
    p.set_grad(from_vector(kGrads[k], {2}, dtype));
    opt.step();
    check_values(p, expected[k], epsilon);
  }
}

}  // namespace

TEST_CASE("SGD without momentum: p -= lr * g", "[optim][sgd]") {
  check_trajectory(optim::SGDOptions(0.1), {{0.95, -1.9}, {0.94, -1.93}, {0.96, -1.97}});
}

TEST_CASE("SGD with momentum, dampening and weight decay follows PyTorch's rule", "[optim][sgd]") {
  check_trajectory(optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01),
                   {{0.949, -1.898},
                    {0.89324589999999993, -1.8314918},
                    {0.86026328868999991, -1.8059860773800001}});
}

TEST_CASE("SGD with Nesterov momentum", "[optim][sgd]") {
  // d = g + wd p;  buf = 0.9 buf + d (clone of d at step 1);  p -= lr (d + 0.9 buf)
  check_trajectory(optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.1).nesterov(true),
                   {{0.943, -1.886},
                    {0.90024149999999992, -1.8479829999999999},
                    {0.88095005574999996, -1.8291988614999999}});
}

TEST_CASE("SGD with maximize ascends", "[optim][sgd]") {
  check_trajectory(optim::SGDOptions(0.1).momentum(0.5).maximize(true),
                   {{1.05, -2.1}, {1.085, -2.12}, {1.0825, -2.09}});
}

TEST_CASE("SGD on float32 parameters matches the float64 trajectory to float precision", "[optim][sgd]") {
  check_trajectory(optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01),
                   {{0.949, -1.898},
                    {0.89324589999999993, -1.8314918},
                    {0.86026328868999991, -1.8059860773800001}},
                   kFloat, 1e-6);
}

TEST_CASE("SGD keeps a momentum buffer per parameter, created on its first step", "[optim][sgd]") {
  Tensor p = from_vector({1.0, -2.0}, {2}, kDouble).requires_grad_(true);
  optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9));
  CHECK_FALSE(opt.momentum_buffer(p).defined());
  p.set_grad(from_vector({0.5, -1.0}, {2}, kDouble));
  opt.step();
  // First step: the buffer is a copy of the gradient (no dampening), not an alias of it.
  Tensor buf = opt.momentum_buffer(p);
  REQUIRE(buf.defined());
  check_values(buf, {0.5, -1.0});
  CHECK_FALSE(buf.is_alias_of(p.grad()));
  CHECK_FALSE(buf.requires_grad());
  // The step ran under no-grad: p is still a leaf with no history.
  CHECK(p.is_leaf());
  CHECK(p.requires_grad());
  CHECK(p.grad_fn() == nullptr);
}

TEST_CASE("SGD skips parameters without a gradient", "[optim][sgd]") {
  Tensor a = from_vector({1.0}, {1}, kDouble).requires_grad_(true);
  Tensor b = from_vector({2.0}, {1}, kDouble).requires_grad_(true);
  optim::SGD opt({a, b}, optim::SGDOptions(0.5).momentum(0.9));
  a.set_grad(from_vector({1.0}, {1}, kDouble));
  opt.step();
  check_values(a, {0.5});
  check_values(b, {2.0});
  CHECK_FALSE(opt.momentum_buffer(b).defined());
}

TEST_CASE("SGD's update runs through the dispatcher (a dispatch mode sees it)", "[optim][sgd]") {
  Tensor p = from_vector({1.0, 2.0}, {2}, kDouble).requires_grad_(true);
  optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9));
  auto counter = std::make_shared<remat::testing::OpCounter>();
  p.set_grad(ones({2}, kDouble));
  opt.step();
  {
    DispatchModeGuard guard(counter);
    opt.step();
  }
  CHECK(counter->count("aten::mul_.Scalar") == 1);  // buf *= momentum
  CHECK(counter->count("aten::add_") == 2);         // buf += g; p += -lr * buf
}

TEST_CASE("SGD rejects bad hyperparameters with PyTorch's messages", "[optim][sgd]") {
  Tensor p = zeros({2}, kDouble).requires_grad_(true);
  REQUIRE_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(-1)), Contains("Invalid learning rate: -1"));
  REQUIRE_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(0.1).momentum(-0.5)), Contains("Invalid momentum value: -0.5"));
  REQUIRE_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(0.1).weight_decay(-1e-3)),
                      Contains("Invalid weight_decay value: -0.001"));
  REQUIRE_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(0.1).nesterov(true)),
                      Contains("Nesterov momentum requires a momentum and zero dampening"));
  REQUIRE_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true)),
                      Contains("Nesterov momentum requires a momentum and zero dampening"));
  REQUIRE_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(std::nan(""))), Contains("Invalid learning rate: nan"));
  REQUIRE_THROWS_WITH(optim::SGD(std::vector<Tensor>{}, optim::SGDOptions(0.1)),
                      Contains("optimizer got an empty parameter list"));
  // A group's own options are checked too.
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{p}, std::make_unique<optim::SGDOptions>(-2));
  REQUIRE_THROWS_WITH(optim::SGD(groups, optim::SGDOptions(0.1)), Contains("Invalid learning rate: -2"));
}
