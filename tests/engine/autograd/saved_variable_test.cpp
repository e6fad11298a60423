// Mirrors test/test_autograd.py (saved variables, in-place version checks, test_saved_variable_*).
// Tests engine/autograd/saved_variable.cpp (SavedVariable: saving inputs, outputs and leaves,
// the version check and its message, freeing, no reference cycles).
#include <catch2/catch.hpp>

#include <cmath>

#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::autograd::SavedVariable;
using remat::testing::f64;
using remat::testing::values;

TEST_CASE("Modifying a saved input in place fails backward with PyTorch's message", "[saved_variable]") {
  Tensor x = from_vector({0.1, 0.2, 0.3}, {3}, f64(true));
  Tensor h = x * 2.0;   // MulBackward0, output 0
  Tensor y = h.sin();   // saves h at version 0
  h.add_(1.0);          // h is now at version 1, output 0 of the in-place AddBackward0
  REQUIRE(h._version() == 1);
  REQUIRE_THROWS_WITH(
      y.sum().backward(),
      "one of the variables needed for gradient computation has been modified by an inplace operation: "
      "[CPUDoubleType [3]], which is output 0 of AddBackward0, is at version 1; expected version 0 instead. "
      "Hint: the operation that failed to compute its gradient used a tensor that was later modified in place.");
}

TEST_CASE("Modifying a saved output in place names the node that saved it", "[saved_variable]") {
  Tensor x = from_vector({0.1, 0.2}, {2}, f64(true));
  Tensor y = x.exp();  // ExpBackward0 saves its output
  y.mul_(2.0);
  REQUIRE_THROWS_WITH(y.sum().backward(),
                      Catch::StartsWith("one of the variables needed for gradient computation has been modified by "
                                        "an inplace operation: [CPUDoubleType [2]], which is output 0 of "
                                        "ExpBackward0, is at version 1; expected version 0 instead."));
}

TEST_CASE("Modifying a saved leaf that needs no grad: the message has no grad_fn part", "[saved_variable]") {
  Tensor x = from_vector({0.1, 0.2}, {2}, f64(true));
  Tensor w = from_vector({3, 4}, {2}, kDouble);  // saved by mul for x's gradient
  Tensor loss = (x * w).sum();
  w.add_(1.0);
  REQUIRE_THROWS_WITH(loss.backward(),
                      Catch::StartsWith("one of the variables needed for gradient computation has been modified by "
                                        "an inplace operation: [CPUDoubleType [2]] is at version 1; expected "
                                        "version 0 instead."));
}

TEST_CASE("The version check sees in-place changes through another alias of the storage", "[saved_variable]") {
  Tensor x = from_vector({0.1, 0.2}, {2}, f64(true));
  Tensor h = x * 2.0;
  Tensor loss = h.sin().sum();
  h.detach().mul_(3.0);  // detach shares the version counter
  REQUIRE_THROWS_WITH(loss.backward(), Catch::Contains("is at version 1; expected version 0 instead"));
}

TEST_CASE("An in-place change of a tensor no node saved is fine", "[saved_variable]") {
  Tensor x = from_vector({0.1, 0.2}, {2}, f64(true));
  Tensor h = x * 2.0;
  Tensor loss = (h + 1.0).sum();  // add saves nothing
  h.mul_(5.0);
  loss.backward();
  // loss was computed from h before the mul_: its graph goes through x * 2 only.
  REQUIRE(values(x.grad()) == std::vector<double>{2, 2});
  Tensor later = (h + 1.0).sum();  // computed after: through mul_ (x5) and x * 2
  x.set_grad(Tensor());
  later.backward();
  REQUIRE(values(x.grad()) == std::vector<double>{10, 10});
}

TEST_CASE("SavedVariable keeps inputs and leaves as they are", "[saved_variable]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  SavedVariable leaf(x, /*is_output=*/false);
  REQUIRE(leaf.defined());
  REQUIRE_FALSE(leaf.has_hooks());
  REQUIRE(leaf.unpack().is_same(x));
  Tensor h = x * 2.0;
  SavedVariable input(h, false);
  REQUIRE(input.unpack().is_same(h));
  REQUIRE(input.unpack().grad_fn() == h.grad_fn());
}

TEST_CASE("SavedVariable of an output stores its data without history; unpack reconnects it", "[saved_variable]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor y = x.exp();
  SavedVariable out(y, /*is_output=*/true);
  Tensor u = out.unpack(y.grad_fn());
  REQUIRE_FALSE(u.is_same(y));
  REQUIRE(u.is_alias_of(y));
  REQUIRE(u.grad_fn() == y.grad_fn());
  REQUIRE(u.output_nr() == 0);
  REQUIRE(values(u) == values(y));
  // Without the node it was saved for, a non-leaf output cannot be reconnected.
  REQUIRE_THROWS_WITH(out.unpack(), Catch::StartsWith("Trying to use a saved tensor that has been detached in-place"));
}

TEST_CASE("SavedVariable: undefined and default, and reset_data frees it", "[saved_variable]") {
  REQUIRE_FALSE(SavedVariable().defined());
  REQUIRE_FALSE(SavedVariable().unpack().defined());
  REQUIRE_FALSE(SavedVariable(Tensor(), false).defined());
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  SavedVariable v(x, false);
  v.reset_data();
  REQUIRE(v.defined());
  REQUIRE_THROWS_WITH(v.unpack(), autograd::ERR_BACKWARD_TWICE);
  REQUIRE(std::string(autograd::ERR_BACKWARD_TWICE) ==
          "Trying to backward through the graph a second time (or directly access saved tensors after they have "
          "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
          "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
          "if you need to access saved tensors after calling backward.");
}

TEST_CASE("Saving an output makes no reference cycle: exp's node dies with its output", "[saved_variable]") {
  const int64_t baseline = autograd::Node::live_count();
  std::weak_ptr<autograd::Node> node;
  {
    Tensor x = from_vector({1, 2}, {2}, f64(true));
    Tensor y = x.exp();
    node = y.grad_fn();
    REQUIRE_FALSE(node.expired());
    REQUIRE(autograd::Node::live_count() > baseline);
    y.reset();
    REQUIRE(node.expired());
  }
  REQUIRE(autograd::Node::live_count() == baseline);
  {
    Tensor x = from_vector({1, 2}, {2}, f64(true));
    Tensor r = (x * 1.0).relu_();  // in place, saves its own (rebased) output
    node = r.grad_fn();
    r.reset();
    REQUIRE(node.expired());
  }
  REQUIRE(autograd::Node::live_count() == baseline);
}

TEST_CASE("Backward frees saved tensors: the bytes go back to the allocator", "[saved_variable]") {
  Tensor x = rand({256}, kDouble).requires_grad_();
  const int64_t before = memory_allocated();
  Tensor loss = x.exp().exp().sum();  // two saved outputs of 2 KiB each
  REQUIRE(memory_allocated() - before == 2 * 2048 + 8);  // + the scalar loss
  loss.backward();
  // The saved outputs are gone; what is left: loss and x.grad.
  REQUIRE(memory_allocated() - before == 8 + 2048);
}
