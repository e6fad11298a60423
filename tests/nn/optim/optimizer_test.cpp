// Tests nn/optim/optimizer.cpp: param groups (own options or the defaults, lr changes),
// zero_grad, and the checks on parameters. SGD is the concrete optimizer.
#include <catch2/catch.hpp>
#include <vector>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::check_values;

TEST_CASE("param groups: each group has its own options, defaults fill the rest", "[optim]") {
  Tensor a = from_vector({1.0}, {1}, kDouble).requires_grad_(true);
  Tensor b = from_vector({1.0}, {1}, kDouble).requires_grad_(true);
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<optim::SGDOptions>(0.01));
  optim::SGD opt(groups, optim::SGDOptions(0.1));
  REQUIRE(opt.param_groups().size() == 2);
  CHECK(opt.param_groups()[0].options().get_lr() == 0.1);
  CHECK(opt.param_groups()[1].options().get_lr() == 0.01);
  a.set_grad(ones({1}, kDouble));
  b.set_grad(ones({1}, kDouble));
  opt.step();
  check_values(a, {0.9});
  check_values(b, {0.99});
  // A learning-rate schedule changes a group's lr in place.
  opt.param_groups()[0].options().set_lr(0.5);
  opt.step();
  check_values(a, {0.4});
  CHECK(opt.parameters().size() == 2);
}

TEST_CASE("Optimizer::zero_grad drops or zeroes gradients", "[optim]") {
  Tensor p = from_vector({1.0, 2.0}, {2}, kDouble).requires_grad_(true);
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  sum(mul(p, p)).backward();
  REQUIRE(p.grad().defined());
  Tensor g = p.grad();
  opt.zero_grad(/*set_to_none=*/false);
  REQUIRE(p.grad().defined());
  CHECK(p.grad().is_same(g));  // zeroed in place
  check_values(p.grad(), {0, 0});
  opt.zero_grad();  // set_to_none = true by default
  CHECK_FALSE(p.grad().defined());
  opt.zero_grad();  // no gradient: nothing to do
  CHECK_FALSE(p.grad().defined());
}

TEST_CASE("Optimizer refuses non-leaf, duplicate and shared parameters", "[optim]") {
  Tensor p = zeros({2}, kDouble).requires_grad_(true);
  Tensor q = zeros({3}, kDouble).requires_grad_(true);
  Tensor non_leaf = mul(p, 2.0);
  REQUIRE_THROWS_WITH(optim::SGD({non_leaf}, optim::SGDOptions(0.1)), Contains("can't optimize a non-leaf Tensor"));
  REQUIRE_THROWS_WITH(optim::SGD({p, q, p}, optim::SGDOptions(0.1)), Contains("duplicate parameters"));
  REQUIRE_THROWS_WITH(optim::SGD({Tensor()}, optim::SGDOptions(0.1)), Contains("undefined tensor"));
  optim::SGD opt({p}, optim::SGDOptions(0.1));
  REQUIRE_THROWS_WITH(opt.add_param_group(optim::OptimizerParamGroup({q, p})),
                      Contains("some parameters appear in more than one parameter group"));
  CHECK(opt.param_groups().size() == 1);
  opt.add_param_group(optim::OptimizerParamGroup({q}));
  CHECK(opt.param_groups().size() == 2);
  CHECK(opt.param_groups()[1].options().get_lr() == 0.1);  // the defaults
}

TEST_CASE("OptimizerParamGroup copies its options; a group without options says so", "[optim]") {
  Tensor p = zeros({2}, kDouble).requires_grad_(true);
  optim::OptimizerParamGroup bare({p});
  CHECK_FALSE(bare.has_options());
  REQUIRE_THROWS_WITH(bare.options(), Contains("this group has no options yet"));
  optim::OptimizerParamGroup with({p}, std::make_unique<optim::AdamWOptions>(0.5));
  optim::OptimizerParamGroup copy(with);
  copy.options().set_lr(0.25);
  CHECK(with.options().get_lr() == 0.5);  // a deep copy
  CHECK(copy.options().get_lr() == 0.25);
  CHECK(copy.params()[0].is_same(p));
  // The optimizer keeps its own copy of each group.
  optim::AdamW opt({with});
  opt.param_groups()[0].options().set_lr(0.1);
  CHECK(with.options().get_lr() == 0.5);
  CHECK(static_cast<const optim::AdamWOptions&>(opt.param_groups()[0].options()).lr() == 0.1);
  CHECK(static_cast<const optim::AdamWOptions&>(opt.defaults()).lr() == 1e-3);
}
