// Mirrors test/test_autograd.py (grad_fn names, sequence_nr, next_functions, hooks).
// Tests engine/autograd/node.cpp (Node: names, sequence numbers, edges, hooks, live count).
#include <catch2/catch.hpp>

#include <limits>

#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::autograd::Node;
using remat::testing::f64;
using remat::testing::values;

TEST_CASE("Node names follow PyTorch's generated names", "[node]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor w = from_vector({3, 4}, {2}, f64(true));
  REQUIRE(x.sin().grad_fn()->name() == "SinBackward0");
  REQUIRE((x * w).grad_fn()->name() == "MulBackward0");
  REQUIRE((x * 2.0).grad_fn()->name() == "MulBackward0");  // the .Scalar overload: same name
  REQUIRE(x.sum().grad_fn()->name() == "SumBackward0");
  REQUIRE(x.view({2, 1}).grad_fn()->name() == "ViewBackward0");
  REQUIRE(x.to(kFloat).grad_fn()->name() == "ToCopyBackward0");
  REQUIRE(autograd::impl::grad_accumulator(x)->name() == "torch::autograd::AccumulateGrad");
  REQUIRE(autograd::backward_node_name("aten::scaled_dot_product_attention") ==
          "ScaledDotProductAttentionBackward0");
  REQUIRE(autograd::backward_node_name("aten::native_layer_norm.overload") == "NativeLayerNormBackward0");
  REQUIRE(autograd::backward_node_name("aten::add_") == "AddBackward0");
  REQUIRE(autograd::backward_node_name("mm") == "MmBackward0");
}

TEST_CASE("Nodes created later get larger sequence numbers; AccumulateGrad runs first", "[node]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  uint64_t next = autograd::peek_at_next_sequence_nr();
  Tensor a = x.sin();
  Tensor b = x.cos();
  REQUIRE(a.grad_fn()->sequence_nr() == next);
  REQUIRE(b.grad_fn()->sequence_nr() == next + 1);
  REQUIRE(autograd::peek_at_next_sequence_nr() == next + 2);
  REQUIRE(autograd::impl::grad_accumulator(x)->sequence_nr() == std::numeric_limits<uint64_t>::max());
}

TEST_CASE("The engine runs nodes in decreasing sequence_nr order", "[node]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor a = x.sin();   // created first
  Tensor b = x.cos();
  Tensor c = x.exp();   // created last
  Tensor loss = (a + b + c).sum();
  std::vector<std::string> order;
  for (const Tensor& t : {a, b, c}) {
    // (The hook captures the name, not the node: a node holding itself would never be freed.)
    t.grad_fn()->add_pre_hook([&order, name = t.grad_fn()->name()](const autograd::variable_list& grads) {
      order.push_back(name);
      return grads;
    });
  }
  loss.backward();
  REQUIRE(order == std::vector<std::string>{"ExpBackward0", "CosBackward0", "SinBackward0"});
}

TEST_CASE("Next edges point at the nodes of the forward inputs", "[node]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor c = from_vector({3, 4}, {2}, kDouble);  // needs no grad
  Tensor h = x * 2.0;
  Tensor y = h * c;
  auto fn = y.grad_fn();
  REQUIRE(fn->num_outputs() == 2);
  REQUIRE(fn->next_edge(0).function == h.grad_fn());
  REQUIRE(fn->next_edge(0).input_nr == 0);
  REQUIRE_FALSE(fn->next_edge(1).is_valid());  // c needs no gradient
  REQUIRE(fn->should_compute_output(0));
  REQUIRE_FALSE(fn->should_compute_output(1));
  REQUIRE_FALSE(fn->should_compute_output(7));
  REQUIRE(fn->num_inputs() == 1);
  REQUIRE(fn->input_metadata(0).shape == Shape{2});
  REQUIRE(fn->input_metadata(0).dtype == kDouble);
  auto mul_fn = h.grad_fn();
  REQUIRE(mul_fn->next_edge(0).function == autograd::impl::grad_accumulator(x));
}

TEST_CASE("Pre and post hooks of a node see and may replace its gradients", "[node]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor y = x * 3.0;
  std::vector<double> seen_in, seen_out;
  y.grad_fn()->add_pre_hook([&](const autograd::variable_list& grads) {
    seen_in = values(grads[0]);
    return autograd::variable_list{grads[0] * 10.0};  // scale the incoming gradient
  });
  y.grad_fn()->add_post_hook([&](const autograd::variable_list& grad_inputs, const autograd::variable_list&) {
    seen_out = values(grad_inputs[0]);
    return grad_inputs;
  });
  y.sum().backward();
  REQUIRE(seen_in == std::vector<double>{1, 1});
  REQUIRE(seen_out == std::vector<double>{30, 30});
  REQUIRE(values(x.grad()) == std::vector<double>{30, 30});
}

TEST_CASE("Node::live_count returns to its baseline when a graph is dropped", "[node]") {
  const int64_t baseline = Node::live_count();
  {
    Tensor x = from_vector({1, 2}, {2}, f64(true));
    Tensor loss = (x.sin() * x.cos()).exp().sum();
    // sin, cos, mul, exp, sum, and x's AccumulateGrad (made when sin recorded its edge to x)
    REQUIRE(Node::live_count() - baseline == 6);
    loss.backward();
    REQUIRE(Node::live_count() - baseline == 6);  // the graph root of backward is gone again
  }
  REQUIRE(Node::live_count() == baseline);
  {
    // After backward, dropping the output frees the graph even though .grad lives on.
    Tensor x = from_vector({1, 2}, {2}, f64(true));
    Tensor loss = (x * x).sum();
    loss.backward();
    loss.reset();
    REQUIRE(Node::live_count() == baseline);
    REQUIRE(x.grad().defined());
  }
  REQUIRE(Node::live_count() == baseline);
}

TEST_CASE("release_variables after backward frees what the graph saved", "[node]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor y = x.exp();
  Tensor loss = (y * y).sum();
  auto mul_fn = loss.grad_fn()->next_edge(0).function;
  REQUIRE(mul_fn->name() == "MulBackward0");
  loss.backward();
  // MulBackward0 saved y twice: both released.
  REQUIRE_THROWS_WITH(mul_fn->apply({ones({2}, kDouble)}),
                      Catch::StartsWith("Trying to backward through the graph a second time"));
  // With retain_graph the node can run again.
  Tensor x2 = from_vector({1, 2}, {2}, f64(true));
  Tensor loss2 = (x2 * x2).sum();
  loss2.backward({}, true);
  auto fn2 = loss2.grad_fn()->next_edge(0).function;
  autograd::variable_list g = fn2->apply({ones({2}, kDouble)});
  REQUIRE(values(g[0]) == std::vector<double>{1, 2});
}
