// Tests of checkpoint/frame.cpp: non-reentrant checkpoint. Ported from PyTorch's
// test/test_autograd.py (test_checkpointing_without_reentrant_*, TestNestedCheckpoint) and
// test/test_utils.py (TestCheckpoint), plus remat's own cases.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/matchers.h"
#include "tests/testing/op_counter.h"

using namespace remat;
using remat::testing::What;
using remat::testing::CountOps;

namespace {

TensorOptions f64() { return TensorOptions().dtype(kDouble); }

CheckpointOptions non_reentrant(std::optional<bool> early_stop = std::nullopt) {
  CheckpointOptions o;
  o.use_reentrant = false;
  o.early_stop = early_stop;
  return o;
}

// Runs loss_fn once plainly and once with every call of `region` checkpointed; compares grads.
void expect_same_grads(const std::vector<Tensor>& leaves, const std::function<Tensor(bool)>& loss_fn) {
  for (const Tensor& l : leaves) l.set_grad(Tensor());
  loss_fn(false).backward();
  std::vector<Tensor> expected;
  for (const Tensor& l : leaves) expected.push_back(l.grad().clone());
  for (const Tensor& l : leaves) l.set_grad(Tensor());
  loss_fn(true).backward();
  for (size_t i = 0; i < leaves.size(); ++i) {
    INFO("leaf " << i);
    REQUIRE(leaves[i].grad().defined());
    REQUIRE(equal(leaves[i].grad(), expected[i]));
  }
}

}  // namespace

TEST_CASE("non-reentrant checkpoint gives the uncheckpointed gradients", "[checkpoint]") {
  manual_seed(0);
  Tensor x = randn({4, 5}, f64()).requires_grad_();
  Tensor w1 = randn({5, 6}, f64()).requires_grad_();
  Tensor w2 = randn({6, 3}, f64()).requires_grad_();
  auto block = [&](const std::vector<Tensor>& in) {
    Tensor h = relu(mm(in[0], w1)).sin();
    return std::vector<Tensor>{mm(h, w2).tanh(), h.sum()};
  };
  expect_same_grads({x, w1, w2}, [&](bool ckpt) {
    std::vector<Tensor> out = ckpt ? checkpoint(block, {x}) : block({x});
    return out[0].sum() + out[1] * 0.5;
  });
}

TEST_CASE("parameters get gradients when the input does not require grad", "[checkpoint]") {
  manual_seed(1);
  Tensor x = randn({3, 4}, f64());
  Tensor w = randn({4, 4}, f64()).requires_grad_();
  expect_same_grads({w}, [&](bool ckpt) {
    auto f = [&](const Tensor& h) { return mm(h, w).exp(); };
    return (ckpt ? checkpoint(f, x) : f(x)).sum();
  });
}

TEST_CASE("checkpoint with grad() and with backward(inputs=)", "[checkpoint]") {
  manual_seed(2);
  Tensor x = randn({3, 3}, f64()).requires_grad_();
  Tensor w = randn({3, 3}, f64()).requires_grad_();
  auto f = [&](const Tensor& h) { return mm(h, w).sin(); };
  std::vector<Tensor> plain = autograd::grad({f(x).sum()}, {x, w});
  std::vector<Tensor> ckpt = autograd::grad({checkpoint(f, x).sum()}, {x, w});
  REQUIRE(equal(plain[0], ckpt[0]));
  REQUIRE(equal(plain[1], ckpt[1]));
  REQUIRE_FALSE(x.grad().defined());

  autograd::backward({checkpoint(f, x).sum()}, {}, false, false, {w});
  REQUIRE(equal(w.grad(), plain[1]));
  REQUIRE_FALSE(x.grad().defined());
}

TEST_CASE("an output that gets no gradient (partial-grad outputs)", "[checkpoint]") {
  manual_seed(3);
  Tensor x = randn({4}, f64()).requires_grad_();
  auto f = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].sin(), in[0].exp()}; };
  std::vector<Tensor> out = checkpoint(f, {x});
  out[1].sum().backward();  // only the second output is used
  REQUIRE(allclose(x.grad(), x.detach().exp()));
}

TEST_CASE("early stop: the kernel that would save the last tensor never runs", "[checkpoint][early_stop]") {
  for (bool early : {true, false}) {
    DYNAMIC_SECTION("early_stop = " << early) {
      Tensor x = randn({5}).requires_grad_();
      int body_runs = 0;
      auto body = [&](const Tensor& h) {
        ++body_runs;
        return h.sin();
      };
      CountOps ops;
      Tensor y = checkpoint(body, x, non_reentrant(early));
      y.sum().backward();
      REQUIRE(body_runs == 2);
      // early stop: sin saves its input before its kernel runs, and the rerun stops right there
      REQUIRE(ops.counter->count("aten::sin") == (early ? 1 : 2));
      REQUIRE(ops.counter->count("aten::cos") == 1);  // sin's backward
    }
  }
}

TEST_CASE("a region that saves nothing is not rerun", "[checkpoint][early_stop]") {
  Tensor x = randn({5}).requires_grad_();
  int body_runs = 0;
  Tensor y = checkpoint([&](const Tensor& h) { ++body_runs; return h * 3.0; }, x);
  y.sum().backward();
  REQUIRE(body_runs == 1);
  REQUIRE(allclose(x.grad(), full({5}, 3.0)));
}

TEST_CASE("early stop precedence: option, then guard, then default", "[checkpoint][early_stop]") {
  struct Row {
    std::optional<bool> guard;
    std::optional<bool> option;
    bool expected;
  };
  const Row table[] = {
      {std::nullopt, std::nullopt, true}, {std::nullopt, true, true}, {std::nullopt, false, false},
      {true, std::nullopt, true},         {true, true, true},         {true, false, false},
      {false, std::nullopt, false},       {false, true, true},        {false, false, false},
  };
  for (const Row& r : table) {
    Tensor x = randn({3}).requires_grad_();
    CountOps ops;
    Tensor y;
    {
      std::unique_ptr<set_checkpoint_early_stop> guard;
      if (r.guard) guard = std::make_unique<set_checkpoint_early_stop>(*r.guard);
      y = checkpoint([](const Tensor& h) { return h.sin(); }, x, non_reentrant(r.option));
    }
    // The guard is captured at forward time: backward runs outside it.
    y.sum().backward();
    INFO("guard " << (r.guard ? std::to_string(*r.guard) : "unset") << ", option "
                  << (r.option ? std::to_string(*r.option) : "unset"));
    REQUIRE(ops.counter->count("aten::sin") == (r.expected ? 1 : 2));
  }
}

TEST_CASE("determinism check: fewer tensors saved during recomputation", "[checkpoint][determinism]") {
  Tensor x = randn({4}).requires_grad_();
  bool first = true;
  auto f = [&](const Tensor& h) {
    Tensor y = first ? h.sin().sin() : h.sin() * 2.0;  // forward saves 2 tensors, recompute 1
    first = false;
    return y;
  };
  Tensor y = checkpoint(f, x);
  REQUIRE_THROWS_MATCHES(y.sum().backward(), CheckpointError, What(Catch::Matchers::Contains("A different number of tensors was saved during the original "
                                                   "forward and recomputation") &&
                             Catch::Matchers::Contains("Number of tensors saved during forward: 2") &&
                             Catch::Matchers::Contains("Number of tensors saved during recomputation: 1")));
}

TEST_CASE("determinism check: more tensors saved during recomputation (early stop off)", "[checkpoint][determinism]") {
  Tensor x = randn({4}).requires_grad_();
  bool first = true;
  auto f = [&](const Tensor& h) {
    Tensor y = first ? h.sin() * 2.0 : h.sin().sin();  // forward saves 1, recompute 2
    first = false;
    return y;
  };
  Tensor y = checkpoint(f, x, non_reentrant(false));
  REQUIRE_THROWS_MATCHES(y.sum().backward(), CheckpointError, What(Catch::Matchers::Contains("trying to save more tensors during recomputation than during "
                                                   "the original forward pass")));
}

TEST_CASE("determinism check: same count, different metadata", "[checkpoint][determinism]") {
  Tensor x = randn({2, 3}).requires_grad_();
  SECTION("shape") {
    bool first = true;
    auto f = [&](const Tensor& h) {
      Tensor y = first ? h.sin() : h.reshape({3, 2}).sin().reshape({2, 3});
      first = false;
      return y;
    };
    Tensor y = checkpoint(f, x);
    REQUIRE_THROWS_MATCHES(y.sum().backward(), CheckpointError, What(Catch::Matchers::Contains("have different metadata than during the forward pass") &&
                               Catch::Matchers::Contains("tensor at position 0") &&
                               Catch::Matchers::Contains("saved metadata: {shape: [2, 3], dtype: Float") &&
                               Catch::Matchers::Contains("recomputed metadata: {shape: [3, 2], dtype: Float")));
  }
  SECTION("dtype") {
    bool first = true;
    auto f = [&](const Tensor& h) {
      Tensor y = first ? h.sin() : h.to(kDouble).sin().to(kFloat);
      first = false;
      return y;
    };
    Tensor y = checkpoint(f, x);
    REQUIRE_THROWS_MATCHES(y.sum().backward(), CheckpointError, What(Catch::Matchers::Contains("dtype: Float") && Catch::Matchers::Contains("dtype: Double")));
  }
  SECTION("determinism_check = none disables it") {
    bool first = true;
    auto f = [&](const Tensor& h) {
      Tensor y = first ? h.sin() : h.to(kDouble).sin().to(kFloat);
      first = false;
      return y;
    };
    CheckpointOptions o;
    o.determinism_check = "none";
    Tensor y = checkpoint(f, x, o);
    REQUIRE_NOTHROW(y.sum().backward());
  }
  SECTION("an unknown mode is an error") {
    CheckpointOptions o;
    o.determinism_check = "strict";
    REQUIRE_THROWS_MATCHES(checkpoint([](const Tensor& h) { return h.sin(); }, x, o), CheckpointError, What(Catch::Matchers::Contains("determinism_check should be one of") &&
                               Catch::Matchers::Contains("'strict'")));
  }
}

TEST_CASE("determinism check: a recompute that saves a constant where forward saved a result", "[checkpoint][determinism]") {
  // Forward exp(sin(x)) saves x (sin's input) and exp's result; the recompute mul(sin(x), c)
  // saves x and the constant c, and not sin(x): only x's gradient is needed, and it reads c.
  // PyTorch catches this by c's shape; so does remat, saving only what a needed gradient reads.
  Tensor x = randn({3, 2}).requires_grad_();
  Tensor c = randn({2});
  bool first = true;
  auto f = [&](const Tensor& h) {
    Tensor y = first ? exp(sin(h)) : mul(sin(h), c);
    first = false;
    return y;
  };
  Tensor y = checkpoint(f, x);
  REQUIRE_THROWS_MATCHES(y.sum().backward(), CheckpointError,
                         What(Catch::Matchers::Contains("have different metadata than during the forward pass") &&
                              Catch::Matchers::Contains("tensor at position 1 (saved by ExpBackward0)") &&
                              Catch::Matchers::Contains("saved metadata: {shape: [3, 2], dtype: Float") &&
                              Catch::Matchers::Contains("recomputed metadata: {shape: [2], dtype: Float")));
}

TEST_CASE("determinism check 'checksum' names the first tensor whose values differ", "[checkpoint][determinism]") {
  Tensor x = randn({4}).requires_grad_();
  double scale = 1.0;  // global state that changes between forward and backward
  auto f = [&](const Tensor& h) { return (h * scale).sin(); };
  CheckpointOptions o;
  o.determinism_check = "checksum";
  Tensor y = checkpoint(f, x, o);
  scale = 2.0;
  REQUIRE_THROWS_MATCHES(y.sum().backward(), CheckpointError, What(Catch::Matchers::Contains("recomputed values differ from the forward pass") &&
                             Catch::Matchers::Contains("tensor at position 0 (saved by SinBackward0)")));
  // The default check (metadata only) lets the same change through, as PyTorch's does.
  x.set_grad(Tensor());
  scale = 1.0;
  Tensor y2 = checkpoint(f, x);
  scale = 2.0;
  REQUIRE_NOTHROW(y2.sum().backward());
}

TEST_CASE("debug = true puts both op logs in the error", "[checkpoint][determinism]") {
  Tensor x = randn({4}).requires_grad_();
  bool first = true;
  auto f = [&](const Tensor& h) {
    Tensor y = first ? h.sin().sin() : h.sin() * 2.0;
    first = false;
    return y;
  };
  CheckpointOptions o;
  o.debug = true;
  Tensor y = checkpoint(f, x, o);
  REQUIRE_THROWS_MATCHES(y.sum().backward(), CheckpointError, What(Catch::Matchers::Contains("Operations executed during the original forward") &&
                             Catch::Matchers::Contains("Operations executed during recomputation") &&
                             Catch::Matchers::Contains("aten::sin(Tensor[4] Float)") &&
                             Catch::Matchers::Contains("aten::mul.Scalar") &&
                             Catch::Matchers::Contains("A different number of tensors was saved")));
  SECTION("set_checkpoint_debug_enabled overrides the option") {
    first = true;
    set_checkpoint_debug_enabled off(false);
    Tensor y2 = checkpoint(f, x, o);
    REQUIRE_THROWS_MATCHES(y2.sum().backward(), CheckpointError, What(!Catch::Matchers::Contains("Operations executed during the original forward")));
  }
  SECTION("debug with a context_fn is an error") {
    CheckpointOptions bad = o;
    bad.context_fn = [] { return CheckpointContexts{}; };
    REQUIRE_THROWS_MATCHES(checkpoint(f, x, bad), CheckpointError, What(Catch::Matchers::Contains("debug=True is incompatible with non-default context_fn")));
  }
}

namespace {
// A custom Function that reads its saved tensors twice in backward (PyTorch's
// test_checkpointing_without_reentrant_custom_function_works).
struct ReadsSavedTwice : autograd::Function<ReadsSavedTwice> {
  static std::vector<Tensor> forward(autograd::AutogradContext* ctx, Tensor x) {
    Tensor out = x.sin();
    ctx->save_for_backward({x, out});
    return {out};
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> grads) {
    std::vector<Tensor> saved = ctx->get_saved_variables();
    REQUIRE_THROWS_MATCHES(ctx->get_saved_variables(), CheckpointError, What(Catch::Matchers::Contains("Unpack is being triggered for a tensor that was already "
                                                     "unpacked once")));
    return {grads[0] * saved[0].cos()};
  }
};
}  // namespace

TEST_CASE("a custom Function inside a checkpoint reading its saved tensors twice", "[checkpoint]") {
  Tensor x = randn({3}).requires_grad_();
  Tensor y = checkpoint([](const Tensor& h) { return ReadsSavedTwice::apply(h)[0]; }, x);
  y.sum().backward();
  REQUIRE(allclose(x.grad(), x.detach().cos()));
}

TEST_CASE("random ops recompute the same values when the RNG state is preserved", "[checkpoint][rng]") {
  manual_seed(7);
  Tensor x = randn({64}).requires_grad_();
  auto f = [](const Tensor& h) { return h.sin() * rand({64}); };  // a fresh random draw inside
  RngState start = get_rng_state();
  f(x).sum().backward();
  Tensor expected = x.grad().clone();
  RngState after_plain = get_rng_state();

  SECTION("preserve_rng_state = true: identical gradients, RNG left where a plain run leaves it") {
    x.set_grad(Tensor());
    set_rng_state(start);
    checkpoint(f, x).sum().backward();
    REQUIRE(equal(x.grad(), expected));
    REQUIRE(get_rng_state() == after_plain);
  }
  SECTION("preserve_rng_state = false: the recomputation draws different numbers") {
    x.set_grad(Tensor());
    set_rng_state(start);
    CheckpointOptions o;
    o.preserve_rng_state = false;
    checkpoint(f, x, o).sum().backward();
    REQUIRE_FALSE(equal(x.grad(), expected));
  }
}

TEST_CASE("autocast state is restored for the recomputation", "[checkpoint][autocast]") {
  Tensor a = randn({8, 8}).requires_grad_();
  Tensor b = randn({8, 8}).requires_grad_();
  int runs = 0;
  auto f = [&](const std::vector<Tensor>& in) {
    ++runs;
    Tensor p = mm(in[0], in[1]);
    REQUIRE(p.dtype() == kBFloat16);  // in forward and in recomputation
    return std::vector<Tensor>{p.sin()};
  };
  Tensor y;
  {
    autocast guard(kCPU, kBFloat16);
    y = checkpoint(f, {a, b})[0];
  }
  REQUIRE_FALSE(is_autocast_enabled(kCPU));
  y.to(kFloat).sum().backward();  // backward runs outside autocast
  REQUIRE(runs == 2);
  REQUIRE(a.grad().dtype() == kFloat);
  REQUIRE_FALSE(is_autocast_enabled(kCPU));
}

TEST_CASE("a tensor hook on a parameter used inside and outside the region fires once", "[checkpoint]") {
  Tensor x = randn({3, 3}).requires_grad_();
  Tensor w = randn({3, 3}).requires_grad_();
  int fired = 0;
  w.register_hook([&](const Tensor&) {
    ++fired;
    return Tensor();
  });
  Tensor inside = checkpoint([&](const Tensor& h) { return mm(h, w).sin(); }, x);
  Tensor outside = mm(x, w);
  (inside.sum() + outside.sum()).backward();
  REQUIRE(fired == 1);
}

TEST_CASE("several backwards: each graph task recomputes; retain_graph; second backward errors", "[checkpoint]") {
  Tensor x = randn({4}).requires_grad_();
  int runs = 0;
  auto f = [&](const Tensor& h) {
    ++runs;
    return h.sin().exp();
  };
  Tensor y = checkpoint(f, x).sum();
  y.backward({}, /*retain_graph=*/true);
  Tensor g1 = x.grad().clone();
  y.backward();
  REQUIRE(runs == 3);  // forward + one recomputation per backward
  REQUIRE(allclose(x.grad(), g1 * 2.0));
  REQUIRE_THROWS_WITH(y.backward(), Catch::Contains("Trying to backward through the graph a second time"));
}

TEST_CASE("memory: recomputed tensors are freed as soon as they are used, even with retain_graph",
          "[checkpoint][memory]") {
  Tensor x = randn({256, 256}).requires_grad_();
  Tensor y = checkpoint([](const Tensor& h) { return h.sin().sin().sin(); }, x).sum();
  int64_t before = memory_allocated();
  y.backward({}, /*retain_graph=*/true);
  // After backward only x.grad remains new; no recomputed activation is kept by the holders.
  REQUIRE(memory_allocated() - before == x.nbytes());
}

namespace {
// 8 blocks of 3 x (Linear(256) + ReLU): activation memory with and without checkpointing.
int64_t activation_bytes(int mode) {  // 0 none, 1 non-reentrant, 2 reentrant
  manual_seed(0);
  std::vector<Tensor> ws, bs;
  for (int i = 0; i < 24; ++i) {
    ws.push_back(randn({256, 256}).mul_(0.05).requires_grad_());
    bs.push_back(zeros({256}).requires_grad_());
  }
  Tensor x = randn({64, 256}).requires_grad_();
  int64_t base = memory_allocated();
  Tensor h = x;
  for (int blk = 0; blk < 8; ++blk) {
    auto block = [&, blk](const Tensor& in) {
      Tensor t = in;
      for (int j = 0; j < 3; ++j) t = relu(linear(t, ws[blk * 3 + j], bs[blk * 3 + j]));
      return t;
    };
    if (mode == 0) {
      h = block(h);
    } else {
      CheckpointOptions o;
      o.use_reentrant = mode == 2;
      h = checkpoint(block, h, o);
    }
  }
  Tensor loss = h.sum();
  int64_t activations = memory_allocated() - base;
  loss.backward();
  return activations;
}
}  // namespace

TEST_CASE("activation memory of 8 checkpointed blocks is below half of no checkpoint", "[checkpoint][memory]") {
  int64_t none = activation_bytes(0);
  int64_t non_reentrant_bytes = activation_bytes(1);
  int64_t reentrant_bytes = activation_bytes(2);
  INFO("none " << none << " non-reentrant " << non_reentrant_bytes << " reentrant " << reentrant_bytes);
  REQUIRE(non_reentrant_bytes * 2 < none);
  REQUIRE(reentrant_bytes * 2 < none);
}

TEST_CASE("nested checkpoints give the same gradients as none, to third order", "[checkpoint][nested]") {
  Tensor x = from_vector({0.3, -0.7, 1.1}, {3}, f64()).requires_grad_();
  auto inner = [](const Tensor& h) { return h.sin().exp(); };
  auto outer = [&](const Tensor& h) { return checkpoint(inner, h.cos()).pow(2.0); };
  auto nested = [&](const Tensor& h) { return checkpoint(outer, h); };
  auto plain = [](const Tensor& h) { return h.cos().sin().exp().pow(2.0); };

  auto derivatives = [&](const std::function<Tensor(const Tensor&)>& f) {
    std::vector<Tensor> out;
    Tensor y = f(x).sum();
    Tensor g = autograd::grad({y}, {x}, {}, false, true)[0];
    out.push_back(g.detach());
    Tensor g2 = autograd::grad({g.sum()}, {x}, {}, false, true)[0];
    out.push_back(g2.detach());
    Tensor g3 = autograd::grad({g2.sum()}, {x}, {}, false, false)[0];
    out.push_back(g3.detach());
    return out;
  };
  std::vector<Tensor> expected = derivatives(plain);
  std::vector<Tensor> got = derivatives(nested);
  for (size_t k = 0; k < 3; ++k) {
    INFO("order " << k + 1);
    REQUIRE(allclose(got[k], expected[k], 1e-12, 1e-12));
  }
}

TEST_CASE("grad() inside a checkpointed function", "[checkpoint][nested]") {
  Tensor x = from_vector({0.2, 0.5, -0.4}, {3}, f64()).requires_grad_();
  auto f = [](const Tensor& h) {
    Tensor y = h.sin().cos();
    Tensor gh = autograd::grad({y.sum()}, {h}, {}, true, true)[0];
    return h.cos() * gh;
  };
  Tensor expected_g = autograd::grad({f(x).sum()}, {x})[0];
  for (bool early : {true, false}) {
    Tensor got = autograd::grad({checkpoint(f, x, non_reentrant(early)).sum()}, {x})[0];
    INFO("early_stop " << early);
    REQUIRE(allclose(got, expected_g, 1e-12, 1e-12));
  }
}

TEST_CASE("no graph stays alive after the scope ends (no reference cycles)", "[checkpoint][nested]") {
  int64_t baseline = autograd::Node::live_count();
  {
    Tensor x = randn({4}).requires_grad_();
    auto inner = [](const Tensor& h) { return h.sin().exp(); };
    Tensor y = checkpoint([&](const Tensor& h) { return checkpoint(inner, h.cos()).tanh(); }, x);
    y.sum().backward();
    Tensor z = checkpoint([&](const Tensor& h) { return checkpoint(inner, h).sum(); }, x);  // never backwarded
  }
  REQUIRE(autograd::Node::live_count() == baseline);
}

TEST_CASE("checkpoint under no-grad just runs the function", "[checkpoint]") {
  Tensor x = randn({3}).requires_grad_();
  int runs = 0;
  autograd::NoGradGuard no_grad;
  Tensor y = checkpoint([&](const Tensor& h) { ++runs; return h.sin(); }, x);
  REQUIRE(runs == 1);
  REQUIRE_FALSE(y.requires_grad());
}

TEST_CASE("unpacking a saved tensor outside backward recomputes with a fresh id", "[checkpoint]") {
  Tensor x = randn({3}).requires_grad_();
  Tensor y = checkpoint([](const Tensor& h) { return h.exp(); }, x);
  // exp saves its result: ask the graph for it directly through a custom Function's saved
  // tensors is not possible from here, so use grad() twice instead (two graph tasks).
  Tensor g1 = autograd::grad({y.sum()}, {x}, {}, true)[0];
  Tensor g2 = autograd::grad({y.sum()}, {x})[0];
  REQUIRE(equal(g1, g2));
}
