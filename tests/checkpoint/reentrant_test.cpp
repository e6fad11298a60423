// Tests of checkpoint/reentrant.cpp: use_reentrant = true. Ported from PyTorch's
// test_autograd.py (test_checkpointing, test_checkpoint_valid_reset_on_error, ...).
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/matchers.h"
#include "tests/testing/op_counter.h"

using namespace remat;
using remat::testing::What;

namespace {
CheckpointOptions reentrant() {
  CheckpointOptions o;
  o.use_reentrant = true;
  return o;
}
}  // namespace

TEST_CASE("reentrant checkpoint gives the uncheckpointed gradients", "[checkpoint][reentrant]") {
  manual_seed(0);
  Tensor x = randn({4, 5}, TensorOptions().dtype(kDouble)).requires_grad_();
  Tensor w = randn({5, 5}, TensorOptions().dtype(kDouble)).requires_grad_();
  auto f = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{relu(mm(in[0], w)).sin(), in[0].exp()}; };
  std::vector<Tensor> plain = f({x});
  (plain[0].sum() + plain[1].sum()).backward();
  Tensor gx = x.grad().clone(), gw = w.grad().clone();
  x.set_grad(Tensor());
  w.set_grad(Tensor());
  int64_t nodes_before = autograd::Node::live_count();
  std::vector<Tensor> out = checkpoint(f, {x}, reentrant());
  // Forward ran under no-grad: only the checkpoint node was recorded.
  REQUIRE(out[0].grad_fn()->name() == "CheckpointFunctionBackward");
  REQUIRE(autograd::Node::live_count() - nodes_before <= 2);  // the node and x's AccumulateGrad
  (out[0].sum() + out[1].sum()).backward();
  REQUIRE(equal(x.grad(), gx));
  REQUIRE(equal(w.grad(), gw));
}

TEST_CASE("reentrant checkpoint is incompatible with grad() and inputs=, and recovers", "[checkpoint][reentrant]") {
  Tensor x = randn({3}).requires_grad_();
  Tensor y = checkpoint([](const Tensor& h) { return h.sin(); }, x, reentrant()).sum();
  REQUIRE_THROWS_MATCHES(autograd::grad({y}, {x}), CheckpointError, What(Catch::Matchers::Contains("When use_reentrant=True, torch.utils.checkpoint is incompatible "
                                                   "with .grad() or passing an `inputs` parameter to .backward()")));
  REQUIRE_THROWS_WITH(autograd::backward({y}, {}, false, false, {x}), Catch::Contains("incompatible with .grad()"));
  // The graph task state is reset after the error: a plain backward works.
  y.backward();
  REQUIRE(allclose(x.grad(), x.detach().cos()));
}

TEST_CASE("reentrant: none of the outputs requires grad", "[checkpoint][reentrant]") {
  Tensor x = randn({3}).requires_grad_();
  Tensor y = checkpoint([](const Tensor& h) { return h.detach() * 2.0; }, x, reentrant());
  REQUIRE_THROWS_MATCHES(y.sum().backward(), CheckpointError, What(Catch::Matchers::Contains("none of output has requires_grad=True, this checkpoint() is not "
                                                   "necessary")));
}

TEST_CASE("reentrant: context_fn and debug are rejected", "[checkpoint][reentrant]") {
  Tensor x = randn({3}).requires_grad_();
  CheckpointOptions o = reentrant();
  o.debug = true;
  REQUIRE_THROWS_MATCHES(checkpoint([](const Tensor& h) { return h.sin(); }, x, o), CheckpointError, What(Catch::Matchers::Contains("Passing `context_fn` or `debug` is only supported when "
                                                   "use_reentrant=False.")));
  o.debug = false;
  o.context_fn = [] { return CheckpointContexts{}; };
  REQUIRE_THROWS_WITH(checkpoint([](const Tensor& h) { return h.sin(); }, x, o),
                      Catch::Contains("only supported when use_reentrant=False"));
}

TEST_CASE("reentrant: the saved inputs are checked for in-place changes", "[checkpoint][reentrant]") {
  Tensor x0 = randn({3}).requires_grad_();
  Tensor x = x0 * 1.0;  // a non-leaf we can modify in place
  Tensor y = checkpoint([](const Tensor& h) { return h.sin(); }, x, reentrant()).sum();
  x.mul_(2.0);
  REQUIRE_THROWS_WITH(y.backward(), Catch::Contains("modified by an inplace operation"));
}

TEST_CASE("reentrant: random ops see the forward's RNG state", "[checkpoint][reentrant][rng]") {
  manual_seed(5);
  Tensor x = randn({32}).requires_grad_();
  auto f = [](const Tensor& h) { return h * rand({32}); };
  RngState start = get_rng_state();
  f(x).sum().backward();
  Tensor expected = x.grad().clone();
  x.set_grad(Tensor());
  set_rng_state(start);
  checkpoint(f, x, reentrant()).sum().backward();
  REQUIRE(equal(x.grad(), expected));
}

TEST_CASE("reentrant: the rerun is counted in checkpoint_stats (one recomputation, its FLOPs)", "[reentrant]") {
  Tensor w = randn({8, 16}, kDouble).requires_grad_();
  Tensor x = randn({4, 8}, kDouble).requires_grad_();
  CheckpointOptions o;
  o.use_reentrant = true;
  reset_checkpoint_stats();
  Tensor y = checkpoint([&](const Tensor& h) { return mm(h, w).relu(); }, x, o);
  REQUIRE(checkpoint_stats().total.recomputations == 0);  // forward ran once, under no-grad
  y.sum().backward();
  CheckpointStats s = checkpoint_stats();
  REQUIRE(s.regions.size() == 1);
  CHECK(s.total.recomputations == 1);
  CHECK(s.total.recomputed_by_op.at("aten::mm") == 1);
  CHECK(s.total.recomputed_by_op.at("aten::relu") == 1);
  CHECK(s.total.flops_recomputed == 2.0 * 4 * 8 * 16 + 4 * 16);  // mm 2mnk, relu one per element
  CHECK(s.total.ops_replayed == 0);
}
