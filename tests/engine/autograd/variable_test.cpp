// Mirrors test/test_autograd.py (requires_grad, hooks, retain_grad, in-place on leaves and non-leaves).
// Tests engine/autograd/variable.cpp (requires_grad, leaves, grad_fn, set_history /
// rebase_history of in-place ops, views and their regenerated grad_fn, tensor hooks,
// retain_grad, .grad assignment). The PyTorch test_inplace_on_view_* cases are in
// tests/engine/autograd/functions/tensor_test.cpp.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::testing::f64;
using remat::testing::values;

TEST_CASE("requires_grad_ on leaves; results of recorded ops are non-leaves", "[variable]") {
  Tensor x = from_vector({1, 2}, {2}, kDouble);
  REQUIRE_FALSE(x.requires_grad());
  REQUIRE(x.is_leaf());
  REQUIRE(x.grad_fn() == nullptr);
  REQUIRE_FALSE(x.impl()->key_set().has(DispatchKey::Autograd));
  x.requires_grad_();
  REQUIRE(x.requires_grad());
  REQUIRE(x.is_leaf());
  REQUIRE(x.impl()->key_set().has(DispatchKey::Autograd));
  Tensor y = x * 2.0;
  REQUIRE(y.requires_grad());
  REQUIRE_FALSE(y.is_leaf());
  REQUIRE(y.output_nr() == 0);
  REQUIRE(y.impl()->key_set().has(DispatchKey::Autograd));
  x.requires_grad_(false);
  REQUIRE_FALSE(x.requires_grad());
  REQUIRE_FALSE(x.impl()->key_set().has(DispatchKey::Autograd));
  Tensor z = x * 2.0;
  REQUIRE_FALSE(z.requires_grad());
  REQUIRE(z.is_leaf());
}

TEST_CASE("requires_grad_ errors", "[variable]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor y = x * 2.0;
  REQUIRE_THROWS_WITH(y.requires_grad_(false),
                      Catch::StartsWith("you can only change requires_grad flags of leaf variables."));
  REQUIRE_THROWS_WITH(arange(3, kLong).requires_grad_(),
                      "only Tensors of floating point and complex dtype can require gradients (got Long)");
  REQUIRE_NOTHROW(arange(3, kLong).requires_grad_(false));
  REQUIRE_THROWS_WITH(Tensor().requires_grad_(), "requires_grad_: called on an undefined Tensor");
}

TEST_CASE("In-place on a leaf that requires grad is an error; under no-grad it is allowed", "[variable]") {
  Tensor x = from_vector({1, 2, 3}, {3}, f64(true));
  REQUIRE_THROWS_WITH(x.add_(1.0), "a leaf Variable that requires grad is being used in an in-place operation. "
                                   "(aten::add_.Scalar on a tensor of shape [3])");
  REQUIRE_THROWS_WITH(x.mul_(ones({3}, kDouble)), Catch::StartsWith("a leaf Variable that requires grad is being "
                                                                    "used in an in-place operation. (aten::mul_ "));
  REQUIRE(x._version() == 0);  // nothing happened
  {
    autograd::NoGradGuard no_grad;
    x.mul_(2.0);  // e.g. an optimizer step
  }
  REQUIRE(values(x) == std::vector<double>{2, 4, 6});
  REQUIRE(x.is_leaf());
  REQUIRE(x.grad_fn() == nullptr);
}

TEST_CASE("In-place on a non-leaf rebases its history; gradients are right", "[variable]") {
  Tensor x = from_vector({1, 2, 3}, {3}, f64(true));
  Tensor y = from_vector({4, 5, 6}, {3}, f64(true));
  Tensor h = x * 3.0;
  auto old_fn = h.grad_fn();
  h.mul_(y);  // h = 3x * y
  REQUIRE(h._version() == 1);
  REQUIRE(h.grad_fn() != old_fn);
  REQUIRE(h.grad_fn()->name() == "MulBackward0");
  REQUIRE(h.grad_fn()->next_edge(0).function == old_fn);  // the old history is an edge of the new node
  REQUIRE(h.output_nr() == 0);
  h.add_(x);  // h = 3xy + x
  REQUIRE(h.grad_fn()->name() == "AddBackward0");
  h.sum().backward();
  REQUIRE(values(x.grad()) == std::vector<double>{3 * 4 + 1, 3 * 5 + 1, 3 * 6 + 1});
  REQUIRE(values(y.grad()) == std::vector<double>{3, 6, 9});
}

TEST_CASE("relu_ on a non-leaf: the gradient is masked by the new values", "[variable]") {
  Tensor x = from_vector({-1, 0.5, 2}, {3}, f64(true));
  Tensor h = x * 1.0;
  h.relu_();
  REQUIRE(h.grad_fn()->name() == "ReluBackward0");
  (h * 2.0).sum().backward();
  REQUIRE(values(x.grad()) == std::vector<double>{0, 2, 2});
}

TEST_CASE("In-place on a view of a tensor in the graph rebases its base onto CopySlices", "[variable]") {
  Tensor x = from_vector({1, 2, 3, 4}, {4}, f64(true));
  Tensor h = x * 1.0;
  Tensor v = h.view({2, 2});
  REQUIRE(v.is_view());
  REQUIRE(v._base().is_same(h));
  REQUIRE_FALSE(h.is_view());
  REQUIRE_FALSE(h._base().defined());
  v.mul_(2.0);
  REQUIRE(h.grad_fn()->name() == "CopySlices");
  REQUIRE(v.grad_fn()->name() == "AsStridedBackward0");
  REQUIRE(h._version() == 1);
  (h * from_vector({1, 2, 3, 4}, {4}, kDouble)).sum().backward();
  REQUIRE(values(x.grad()) == std::vector<double>{2, 4, 6, 8});
  // Views of tensors outside autograd are written as before.
  Tensor plain = zeros({4}, kDouble);
  plain.view({2, 2}).add_(1.0);
  REQUIRE(values(plain) == std::vector<double>{1, 1, 1, 1});
  REQUIRE_FALSE(plain.requires_grad());
}

TEST_CASE("A view used after an in-place op on its base gets its grad_fn regenerated", "[variable]") {
  Tensor x = from_vector({1, 2, 3, 4}, {4}, f64(true));
  Tensor h = x * 1.0;
  Tensor v = h.view({2, 2});
  Tensor before = v * 3.0;  // recorded through ViewBackward0
  REQUIRE(v.grad_fn()->name() == "ViewBackward0");
  h.mul_(2.0);              // the base changes: v's values now come from h's new history
  REQUIRE(v.grad_fn()->name() == "AsStridedBackward0");
  REQUIRE(v.grad_fn()->next_edge(0).function == h.grad_fn());
  REQUIRE(v.output_nr() == 0);
  Tensor after = v * 3.0;
  (before.sum() + after.sum()).backward();
  REQUIRE(values(x.grad()) == std::vector<double>{9, 9, 9, 9});  // 3 + 3 * 2
  // Without grad, a view is just data.
  autograd::NoGradGuard no_grad;
  REQUIRE(values(v * 1.0) == std::vector<double>{2, 4, 6, 8});
}

TEST_CASE("A view keeps the Autograd key: its base may come to require grad", "[variable]") {
  Tensor x = zeros({4}, kDouble);
  Tensor v = x.narrow(0, 1, 2);
  REQUIRE_FALSE(v.requires_grad());
  REQUIRE(v.impl()->key_set().has(DispatchKey::Autograd));
  REQUIRE_FALSE(x.impl()->key_set().has(DispatchKey::Autograd));
  Tensor w = from_vector({1, 2, 3, 4}, {4}, f64(true));
  x.add_(w);  // x now has history, and so has v
  REQUIRE(x.impl()->key_set().has(DispatchKey::Autograd));
  REQUIRE(v.requires_grad());
  Tensor y = v * 5.0;  // recorded: v has the key
  REQUIRE(y.requires_grad());
  y.sum().backward();
  REQUIRE(values(w.grad()) == std::vector<double>{0, 5, 5, 0});
  // An integer view is no autograd view.
  Tensor ids = arange(4, kLong).narrow(0, 0, 2);
  REQUIRE_FALSE(ids.is_view());
  REQUIRE_FALSE(ids.impl()->key_set().has(DispatchKey::Autograd));
}

TEST_CASE("A view made under no_grad of a tensor that requires grad reports requires_grad", "[variable]") {
  // As in PyTorch: the view's requires_grad follows its base, though no history was recorded.
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor v;
  {
    autograd::NoGradGuard no_grad;
    v = x.view({2});
  }
  REQUIRE(v.requires_grad());
  REQUIRE(v.is_leaf());
  REQUIRE(v.grad_fn() == nullptr);
  REQUIRE_THROWS_WITH(v.mul_(2.0), Catch::StartsWith("A view was created in no_grad mode and is being modified "
                                                     "inplace with grad mode enabled."));
  // A view of it made with grad on has a grad_fn, and the stricter creation meta.
  Tensor w = v.view({1, 2});
  REQUIRE(w.grad_fn()->name() == "ViewBackward0");
  REQUIRE_THROWS_WITH(w.mul_(2.0), Catch::StartsWith("Output 0 of ViewBackward0 is a view of a view which was created "
                                                     "in no_grad mode and is being modified inplace with grad mode "
                                                     "enabled. Given that this use case is ambiguous and error-prone, "
                                                     "it is forbidden."));
  autograd::NoGradGuard no_grad;
  v.mul_(2.0);  // allowed under no_grad
  REQUIRE(values(x) == std::vector<double>{2, 4});
}

namespace {
struct TwoOutputs : autograd::Node {
  autograd::variable_list apply(autograd::variable_list&& grads) override { return grads; }
  std::string name() const override { return "TwoOutputs"; }
};
}  // namespace

TEST_CASE("rebase_history: a node that modifies a view in place must have one output", "[variable]") {
  Tensor x = from_vector({1, 2, 3}, {3}, f64(true)) * 1.0;
  Tensor v = x.narrow(0, 0, 2);
  auto node = std::make_shared<TwoOutputs>();
  node->add_input_metadata(zeros({1}, kDouble));  // another output, already connected
  REQUIRE_THROWS_WITH(autograd::impl::rebase_history(v, node),
                      "Functions which modify views in-place must return a single Variable (TwoOutputs returns 2)");
  REQUIRE(x.grad_fn()->name() == "MulBackward0");  // the base's history is unchanged
}

TEST_CASE("A tensor hook sees the gradient and may replace it", "[variable]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  std::vector<double> seen;
  x.register_hook([&](const Tensor& g) {
    seen = values(g);
    return g * 10.0;  // the leaf's .grad gets the replacement
  });
  Tensor h = x * 3.0;
  h.register_hook([](const Tensor& g) { return g + 1.0; });
  h.register_hook([](const Tensor&) { return Tensor(); });  // undefined: keep the gradient
  h.sum().backward();
  REQUIRE(seen == std::vector<double>{6, 6});  // (1 + 1) * 3
  REQUIRE(values(x.grad()) == std::vector<double>{60, 60});
  Tensor plain = zeros({2}, kDouble);
  REQUIRE_THROWS_WITH(plain.register_hook([](const Tensor& g) { return g; }),
                      "cannot register a hook on a tensor that doesn't require gradient");
}

TEST_CASE("retain_grad fills .grad of a non-leaf", "[variable]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor h = x * 3.0;
  h.retain_grad();
  h.retain_grad();  // twice is once
  Tensor loss = (h * h).sum();
  loss.backward({}, true);
  REQUIRE(values(h.grad()) == std::vector<double>{6, 12});
  loss.backward();
  REQUIRE(values(h.grad()) == std::vector<double>{12, 24});  // accumulates
  Tensor no_history = zeros({2}, kDouble);
  REQUIRE_THROWS_WITH(no_history.retain_grad(), "can't retain_grad on Tensor that has requires_grad=False");
  x.retain_grad();  // a leaf keeps .grad anyway
  REQUIRE(x.grad().defined());
}

TEST_CASE("set_grad assigns .grad and checks its size", "[variable]") {
  Tensor x = from_vector({1, 2, 3}, {3}, f64(true));
  x.set_grad(ones({3}, kDouble));
  REQUIRE(values(x.grad()) == std::vector<double>{1, 1, 1});
  (x * 2.0).sum().backward();
  REQUIRE(values(x.grad()) == std::vector<double>{3, 3, 3});
  x.set_grad(Tensor());
  REQUIRE_FALSE(x.grad().defined());
  REQUIRE_THROWS_WITH(x.set_grad(ones({2}, kDouble)),
                      "assigned grad has data of a different size: [2] vs. the tensor's [3]");
}

TEST_CASE("tensor_data: same storage and version, no history", "[variable]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor h = x * 2.0;
  Tensor d = autograd::tensor_data(h);
  REQUIRE(d.is_alias_of(h));
  REQUIRE_FALSE(d.is_same(h));
  REQUIRE_FALSE(d.requires_grad());
  REQUIRE(d.grad_fn() == nullptr);
  REQUIRE(d.sizes() == h.sizes());
  REQUIRE(d._version() == h._version());
}

TEST_CASE("detach: no history, no grad, shared data", "[variable]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor h = x * 2.0;
  Tensor d = h.detach();
  REQUIRE_FALSE(d.requires_grad());
  REQUIRE(d.grad_fn() == nullptr);
  REQUIRE(d.is_alias_of(h));
  // Gradient does not flow through detach: d/dx of x * detach(x) is detach(x).
  Tensor z = from_vector({3, 4}, {2}, f64(true));
  (z * z.detach()).sum().backward();
  REQUIRE(values(z.grad()) == std::vector<double>{3, 4});
}

TEST_CASE("Ops under NoGradGuard record nothing", "[variable]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor y;
  {
    autograd::NoGradGuard g;
    y = x.sin();
  }
  REQUIRE_FALSE(y.requires_grad());
  REQUIRE(y.is_leaf());
}
