// Tests of checkpoint/checkpoint.cpp: the entry points (every flavour on one region with in-place
// ops on views), checkpoint_sequential and the RAII settings. Ported from PyTorch's
// test_utils.py (TestCheckpoint.test_checkpoint_sequential...).
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

TEST_CASE("checkpoint_sequential: 10 functions, 2 segments", "[checkpoint][sequential]") {
  for (bool use_reentrant : {false, true}) {
    DYNAMIC_SECTION("use_reentrant = " << use_reentrant) {
      std::vector<int> runs(10, 0);
      std::vector<std::function<Tensor(const Tensor&)>> fns;
      for (int i = 0; i < 10; ++i) {
        fns.push_back([&runs, i](const Tensor& h) {
          ++runs[static_cast<size_t>(i)];
          return (h * (1.0 + 0.1 * i)).sin();
        });
      }
      Tensor x = randn({4}).requires_grad_();
      CheckpointOptions o;
      o.use_reentrant = use_reentrant;
      checkpoint_sequential(fns, 2, x, o).sum().backward();
      for (int i = 0; i < 10; ++i) {
        INFO("function " << i);
        REQUIRE(runs[static_cast<size_t>(i)] == (i < 5 ? 2 : 1));
      }
      // Same gradient as running the functions plainly.
      Tensor g = x.grad().clone();
      x.set_grad(Tensor());
      Tensor h = x;
      for (auto& f : fns) h = f(h);
      h.sum().backward();
      REQUIRE(allclose(x.grad(), g));
    }
  }
}

TEST_CASE("in-place ops on views in a region: every checkpoint flavour gives the plain gradients bitwise",
          "[checkpoint][views]") {
  manual_seed(3);
  Tensor x = randn({4, 3}, kDouble).requires_grad_();
  Tensor w0 = randn({3, 3}, kDouble).requires_grad_();
  Tensor w = randn({2, 3}, kDouble).requires_grad_();
  CheckpointFn region = [&](const std::vector<Tensor>& in) {
    Tensor h = mm(in[0], w0) + 1.0;
    Tensor v = h.select(1, 0);        // taken before its base changes: its grad_fn is regenerated
    h.narrow(0, 1, 2).mul_(w);        // the base's history becomes CopySlices
    h.t().narrow(0, 2, 1).relu_();    // a view of a view, an op that saves its output
    return std::vector<Tensor>{(h * h).sum() + v.exp().sum()};
  };
  auto grads = [&](const CheckpointOptions* o) {
    for (Tensor* t : {&x, &w0, &w}) t->set_grad(Tensor());
    Tensor loss = o == nullptr ? region({x})[0] : checkpoint(region, {x}, *o)[0];
    loss.backward();
    return std::vector<Tensor>{x.grad(), w0.grad(), w.grad()};
  };
  const std::vector<Tensor> plain = grads(nullptr);
  std::vector<std::pair<std::string, CheckpointOptions>> flavours(5);
  flavours[0].first = "non-reentrant";
  flavours[1].first = "non-reentrant, no early stop";
  flavours[1].second.early_stop = false;
  flavours[2].first = "reentrant";
  flavours[2].second.use_reentrant = true;
  flavours[3].first = "SAC keeping mm";
  flavours[3].second.context_fn = [] { return create_selective_checkpoint_contexts({"aten::mm"}); };
  flavours[4].first = "SAC keeping everything not mutated";
  flavours[4].second.context_fn = [] {
    return create_selective_checkpoint_contexts(PolicyFn(
        [](const SelectiveCheckpointContext&, const OperatorHandle& op, const std::vector<IValue>&) {
          // What gets modified in place (h, its views, the clone that saves a view's old value) is
          // recomputed: SAC rightly rejects a cache entry that was mutated after it was kept.
          bool mutated = policies::is_view_op(op) || op.name() == "aten::add.Scalar" || op.name() == "aten::clone";
          return mutated ? CheckpointPolicy::MUST_RECOMPUTE : CheckpointPolicy::MUST_SAVE;
        }));
  };
  for (const auto& [name, options] : flavours) {
    INFO(name);
    reset_checkpoint_stats();
    std::vector<Tensor> got = grads(&options);
    for (size_t i = 0; i < plain.size(); ++i) REQUIRE(equal(got[i], plain[i]));
    REQUIRE(checkpoint_stats().total.recomputations == 1);
  }
}

TEST_CASE("checkpoint_sequential: bad segment counts", "[checkpoint][sequential]") {
  std::vector<std::function<Tensor(const Tensor&)>> fns(3, [](const Tensor& h) { return h.sin(); });
  Tensor x = randn({2}).requires_grad_();
  REQUIRE_THROWS_WITH(checkpoint_sequential(fns, 0, x), Catch::Contains("segments must be between 1 and the number of functions (3), got 0"));
  REQUIRE_THROWS_WITH(checkpoint_sequential(fns, 4, x), Catch::Contains("got 4"));
}

TEST_CASE("checkpoint rejects an empty function", "[checkpoint]") {
  Tensor x = randn({2});
  REQUIRE_THROWS_WITH(checkpoint(CheckpointFn(), {x}), Catch::Contains("the function to checkpoint is empty"));
}

TEST_CASE("CheckpointError is a remat::Error", "[checkpoint]") {
  Tensor x = randn({3}).requires_grad_();
  CheckpointOptions o;
  o.determinism_check = "bogus";
  REQUIRE_THROWS_AS(checkpoint([](const Tensor& h) { return h.sin(); }, x, o), Error);
}
