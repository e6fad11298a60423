// Mirrors test/test_autograd.py (gradient accumulation into .grad, create_graph accumulation).
// Tests engine/autograd/accumulate_grad.cpp (AccumulateGrad: first gradient, in-place
// accumulation, create_graph accumulation, leaf hooks).
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::testing::CountingMode;
using remat::testing::f64;
using remat::testing::values;

TEST_CASE("The first gradient is stolen when nothing else holds it; later ones add in place", "[accumulate_grad]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  auto mode = std::make_shared<CountingMode>();
  {
    DispatchModeGuard g(mode);
    (x * 3.0).sum().backward();
  }
  REQUIRE(mode->count("aten::clone") == 0);  // the gradient buffer became .grad without a copy
  Tensor first = x.grad();
  void* buffer = first.data_ptr();
  (x * 4.0).sum().backward();
  REQUIRE(x.grad().is_same(first));  // same tensor, updated in place
  REQUIRE(x.grad().data_ptr() == buffer);
  REQUIRE(values(first) == std::vector<double>{7, 7});
}

TEST_CASE("A gradient someone else holds is copied into .grad", "[accumulate_grad]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor g = from_vector({5, 6}, {2}, kDouble);
  x.backward(g);  // the root gradient of a leaf goes straight to its AccumulateGrad
  REQUIRE(values(x.grad()) == std::vector<double>{5, 6});
  REQUIRE_FALSE(x.grad().is_alias_of(g));
  g.mul_(0.0);  // the caller's tensor is its own
  REQUIRE(values(x.grad()) == std::vector<double>{5, 6});
}

TEST_CASE("With create_graph, .grad keeps a history and accumulation is out of place", "[accumulate_grad]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  (x * x).sum().backward({}, false, /*create_graph=*/true);
  Tensor g1 = x.grad();
  REQUIRE(g1.requires_grad());
  REQUIRE(values(g1) == std::vector<double>{2, 4});
  (x * x * x).sum().backward({}, false, /*create_graph=*/true);
  Tensor g2 = x.grad();
  REQUIRE_FALSE(g2.is_same(g1));  // a new tensor: g1 is part of a graph
  REQUIRE(values(g1) == std::vector<double>{2, 4});
  REQUIRE(values(g2) == std::vector<double>{2 + 3, 4 + 12});
  // d/dx of the accumulated grad sum(2x + 3x^2) = 2 + 6x
  REQUIRE(values(autograd::grad({g2.sum()}, {x})[0]) == std::vector<double>{8, 14});
  x.set_grad(Tensor());  // breaks the x -> .grad -> graph -> AccumulateGrad(x) cycle
}

TEST_CASE("backward(create_graph) makes a cycle through .grad, as in PyTorch; resetting .grad breaks it",
          "[accumulate_grad]") {
  // PyTorch warns: "Using backward() with create_graph=True will create a reference cycle between
  // the parameter and its gradient ... reset the .grad fields of your parameters to None after use".
  const int64_t baseline = autograd::Node::live_count();
  {
    Tensor x = from_vector({1, 2}, {2}, f64(true));
    (x * x).sum().backward();
    REQUIRE(autograd::impl::try_get_grad_accumulator(x) == nullptr);  // freed with the graph
    x.set_grad(Tensor());
    (x * x).sum().backward({}, false, /*create_graph=*/true);
    // x.grad's history ends at x's AccumulateGrad, which holds x: it outlives the forward graph.
    std::weak_ptr<autograd::Node> acc = autograd::impl::try_get_grad_accumulator(x);
    REQUIRE_FALSE(acc.expired());
    REQUIRE(autograd::Node::live_count() > baseline);
    x.set_grad(Tensor());
    REQUIRE(acc.expired());
  }
  REQUIRE(autograd::Node::live_count() == baseline);
}

TEST_CASE("Leaf hooks run before accumulation, in registration order", "[accumulate_grad]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  std::vector<int> order;
  x.register_hook([&](const Tensor& g) {
    order.push_back(1);
    return g * 2.0;
  });
  x.register_hook([&](const Tensor& g) {
    order.push_back(2);
    return g + 1.0;
  });
  (x * 3.0).sum().backward();
  REQUIRE(order == std::vector<int>{1, 2});
  REQUIRE(values(x.grad()) == std::vector<double>{7, 7});
}

TEST_CASE("AccumulateGrad is one node per leaf, held weakly by the leaf", "[accumulate_grad]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  REQUIRE(autograd::impl::try_get_grad_accumulator(x) == nullptr);
  Tensor a = x * 2.0;
  auto acc = autograd::impl::try_get_grad_accumulator(x);
  REQUIRE(acc != nullptr);
  Tensor b = x * 3.0;
  REQUIRE(autograd::impl::grad_accumulator(x) == acc);
  REQUIRE(a.grad_fn()->next_edge(0).function == acc);
  std::weak_ptr<autograd::Node> weak = acc;
  acc.reset();
  a.reset();
  b.reset();
  REQUIRE(weak.expired());  // the leaf does not keep its accumulator alive
  REQUIRE(autograd::impl::grad_accumulator(from_vector({1}, {1}, kDouble)) == nullptr);  // no grad: none
}

TEST_CASE("A first gradient that is an expanded view is copied, so later accumulation stays right", "[accumulate_grad]") {
  // sum's backward hands AccumulateGrad an expanded (stride-0) gradient; stealing it as .grad
  // would make the next in-place accumulation write one element many times.
  Tensor x = from_vector({1, 2, 3}, {3}, f64(true));
  x.sum().backward();
  REQUIRE(x.grad().is_contiguous());
  REQUIRE(values(x.grad()) == std::vector<double>{1, 1, 1});
  (x * from_vector({1, 2, 3}, {3}, kDouble)).sum().backward();
  REQUIRE(values(x.grad()) == std::vector<double>{2, 3, 4});
}

TEST_CASE("A first gradient that is a view of a fresh product is stolen, without its view metadata", "[accumulate_grad]") {
  // linear's weight gradient is t(t(product)) (mm's backward for a transposed operand, then
  // t's backward): a view whose base only the view holds. PyTorch steals it (new_grad.detach()).
  Tensor w = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, f64(true));
  Tensor x = from_vector({1, 0, 2, 1, 1, 1}, {2, 3}, kDouble);
  auto mode = std::make_shared<CountingMode>();
  {
    DispatchModeGuard g(mode);
    mm(x, w.t()).sum().backward();
  }
  CHECK(mode->count("aten::clone") == 0);
  CHECK_FALSE(w.grad().is_view());
  CHECK(w.grad().is_contiguous());
  CHECK(values(w.grad()) == std::vector<double>{2, 1, 3, 2, 1, 3});  // column sums of x, per row of w
  mm(x, w.t()).sum().backward();  // accumulated in place into the stolen buffer
  CHECK(values(w.grad()) == std::vector<double>{4, 2, 6, 4, 2, 6});
}

namespace {
// A custom backward returning a view of a tensor the caller keeps (held).
Tensor held;
struct ViewOfHeld : autograd::Function<ViewOfHeld> {
  static Tensor forward(autograd::AutogradContext*, Tensor x) { return x * 1.0; }
  static std::vector<Tensor> backward(autograd::AutogradContext*, std::vector<Tensor>) { return {held.view({2})}; }
};
}  // namespace

TEST_CASE("A first gradient that is a view of a tensor someone else holds is copied", "[accumulate_grad]") {
  // Stealing it would let the next accumulation write into the caller's tensor.
  held = from_vector({5, 6}, {2}, kDouble);
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  ViewOfHeld::apply(x).sum().backward();
  CHECK_FALSE(x.grad().is_alias_of(held));
  ViewOfHeld::apply(x).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{10, 12});
  CHECK(values(held) == std::vector<double>{5, 6});  // the caller's tensor untouched
  held = Tensor();
}
