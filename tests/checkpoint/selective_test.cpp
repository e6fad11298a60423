// Tests of checkpoint/selective.cpp: selective activation checkpointing. Ported from PyTorch's
// test_autograd.py (TestSelectiveActivationCheckpoint: test_flops_and_mem, test_output_already_has_autograd_meta,
// test_version_counter, test_function_with_more_than_one_output, test_can_only_trigger_recompute_once,
// test_storage_lifetime, test_policy_with_state, test_nested_sac ...) and torchtitan's AC unit test.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/matchers.h"
#include "tests/testing/op_counter.h"

using namespace remat;
using remat::testing::CountOps;
using remat::testing::What;

namespace {

constexpr int64_t kMiB = 1 << 20;

CheckpointOptions sac(std::function<CheckpointContexts()> ctx, std::optional<bool> early_stop = std::nullopt) {
  CheckpointOptions o;
  o.context_fn = std::move(ctx);
  o.early_stop = early_stop;
  return o;
}

// torchtitan's test: sum(sin(mm(cos(x), y))) on 512x512.
struct TitanResult {
  int backward_mm_calls;
  int64_t activation_bytes;
};
TitanResult run_titan(int mode) {  // 0 none, 1 full, 2 SAC list, 3 SAC policy, 4 SAC bool
  manual_seed(0);
  Tensor x = randn({512, 512}).requires_grad_();
  Tensor y = randn({512, 512}).requires_grad_();
  auto fn = [&](const Tensor& a) { return mm(a.cos(), y).sin().sum(); };
  int64_t base = memory_allocated();
  Tensor loss;
  switch (mode) {
    case 0: loss = fn(x); break;
    case 1: loss = checkpoint(fn, x); break;
    case 2: loss = checkpoint(fn, x, sac([] { return create_selective_checkpoint_contexts({"aten::mm"}); })); break;
    case 3:
      loss = checkpoint(fn, x, sac([] {
        return create_selective_checkpoint_contexts(
            PolicyFn([](const SelectiveCheckpointContext&, const OperatorHandle& op, const std::vector<IValue>&) {
              return op.name() == "aten::mm" ? CheckpointPolicy::MUST_SAVE : CheckpointPolicy::PREFER_RECOMPUTE;
            }));
      }));
      break;
    default:
      loss = checkpoint(fn, x, sac([] {
        return create_selective_checkpoint_contexts(
            BoolPolicyFn([](const SelectiveCheckpointContext&, const OperatorHandle& op, const std::vector<IValue>&) {
              return op.name() == "aten::mm";
            }));
      }));
  }
  int64_t activations = memory_allocated() - base - loss.nbytes();
  CountOps ops;
  loss.backward();
  return {ops.counter->count("aten::mm"), activations};
}

}  // namespace

TEST_CASE("torchtitan's AC test: backward mm calls and activation memory", "[sac]") {
  TitanResult none = run_titan(0), full = run_titan(1);
  REQUIRE(none.backward_mm_calls == 2);
  REQUIRE(none.activation_bytes == 2 * kMiB);
  REQUIRE(full.backward_mm_calls == 3);
  REQUIRE(full.activation_bytes == 0);
  for (int mode : {2, 3, 4}) {
    TitanResult r = run_titan(mode);
    INFO("SAC form " << mode << " (2 list, 3 policy, 4 bool)");
    REQUIRE(r.backward_mm_calls == 2);
    REQUIRE(r.activation_bytes == 1 * kMiB);
  }
}

namespace {
// x -> mm(512x512) -> mm(512x512) -> mm(512x1024) -> sum, early stop off.
struct ChainResult {
  double backward_matmul_flops;
  double recomputed_flops;
  int64_t activation_bytes;
};
class MatmulFlops : public DispatchMode {
 public:
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    if (op.name() == "aten::mm") {
      const Tensor& a = args[0].toTensor();
      const Tensor& b = args[1].toTensor();
      flops += 2.0 * a.size(0) * a.size(1) * b.size(1);
    }
    return op.call(args);
  }
  double flops = 0;
};
ChainResult run_chain(const std::function<CheckpointOptions()>& options, bool checkpointed) {
  manual_seed(0);
  Tensor x = randn({512, 512}).requires_grad_();
  Tensor w1 = randn({512, 512}).requires_grad_();
  Tensor w2 = randn({512, 512}).requires_grad_();
  Tensor w3 = randn({512, 1024}).requires_grad_();
  auto fn = [&](const Tensor& a) {
    Tensor h1 = mm(a, w1);
    Tensor h2 = mm(h1, w2);
    scope head("head");
    return mm(h2, w3).sum();
  };
  reset_checkpoint_stats();
  int64_t base = memory_allocated();
  Tensor loss = checkpointed ? checkpoint(fn, x, options()) : fn(x);
  int64_t activations = memory_allocated() - base - loss.nbytes();
  auto counter = std::make_shared<MatmulFlops>();
  {
    DispatchModeGuard g(counter);
    loss.backward();
  }
  return {counter->flops, checkpoint_stats().total.flops_recomputed, activations};
}
}  // namespace

TEST_CASE("matmul chain: backward FLOPs and activation memory per strategy (hand-derived)", "[sac]") {
  const double n3 = 512.0 * 512.0 * 512.0;
  // Gradient matmuls: every mm has 2 (inputs and weights require grad): 4*(2 n^3) + 2*(2 n^2 2n).
  const double grad_flops = 16 * n3;
  ChainResult none = run_chain({}, false);
  REQUIRE(none.backward_matmul_flops == grad_flops);
  REQUIRE(none.activation_bytes == 2 * kMiB);  // h1 and h2 (x and the weights are leaves)

  ChainResult full = run_chain([] { CheckpointOptions o; o.early_stop = false; return o; }, true);
  REQUIRE(full.activation_bytes == 0);
  // all three mms again (early stop off), and sum's one output element
  REQUIRE(full.recomputed_flops == 8 * n3 + 1);
  REQUIRE(full.backward_matmul_flops == grad_flops + 8 * n3);

  ChainResult every_other = run_chain([] {
    return sac([] { return create_selective_checkpoint_contexts(policies::save_every_other({"aten::mm"})); }, false);
  }, true);
  // mm #0 and mm #2 are kept (h1: 1 MiB, h3: 2 MiB); mm #1 is recomputed.
  REQUIRE(every_other.activation_bytes == 3 * kMiB);
  REQUIRE(every_other.recomputed_flops == 2 * n3 + 1);
  REQUIRE(every_other.backward_matmul_flops == grad_flops + 2 * n3);

  ChainResult by_scope = run_chain([] {
    return sac([] {
      return create_selective_checkpoint_contexts(
          policies::compose({policies::recompute_scopes({"head"}), policies::save_matmuls()}));
    }, false);
  }, true);
  // h1 and h2 kept; the head's mm is not, but backward never needs its output: every tensor
  // backward needs is kept or was not made in the region, so the region is not rerun at all
  // (PyTorch reruns it and recomputes the head's mm, 2*n^2*2n).
  REQUIRE(by_scope.activation_bytes == 2 * kMiB);
  REQUIRE(by_scope.recomputed_flops == 0);
  REQUIRE(by_scope.backward_matmul_flops == grad_flops);
}

TEST_CASE("the op list is validated: an unknown name throws with the closest names", "[sac]") {
  REQUIRE_THROWS_MATCHES(create_selective_checkpoint_contexts(std::vector<std::string>{"aten.mm"}), Error,
                         What(Catch::Matchers::Contains("'aten.mm' in ops_to_save is not a registered op") &&
                              Catch::Matchers::Contains("Closest registered names: aten::mm")));
  REQUIRE_THROWS_WITH(create_selective_checkpoint_contexts(std::vector<std::string>{"aten::mm", "aten::mmm"}),
                      Catch::Contains("'aten::mmm'"));
}

TEST_CASE("SAC only with non-reentrant checkpoint", "[sac]") {
  Tensor x = randn({3}).requires_grad_();
  CheckpointOptions o = sac([] { return create_selective_checkpoint_contexts({"aten::sin"}); });
  o.use_reentrant = true;
  REQUIRE_THROWS_MATCHES(checkpoint([](const Tensor& h) { return h.sin(); }, x, o), CheckpointError,
                         What(Catch::Matchers::Contains("Passing `context_fn` or `debug` is only supported when "
                                                        "use_reentrant=False.")));
}

TEST_CASE("the policy is asked once per op call, in forward only", "[sac]") {
  Tensor x = randn({4, 4}).requires_grad_();
  int asked = 0;
  std::vector<std::string> seen;
  auto fn = [](const Tensor& h) { return mm(h.sin(), h).cos().sum(); };
  Tensor loss = checkpoint(fn, x, sac([&] {
    return create_selective_checkpoint_contexts(
        PolicyFn([&](const SelectiveCheckpointContext& ctx, const OperatorHandle& op, const std::vector<IValue>&) {
          ++asked;
          REQUIRE_FALSE(ctx.is_recompute);
          seen.push_back(op.name());
          return CheckpointPolicy::PREFER_RECOMPUTE;
        }));
  }));
  int after_forward = asked;
  loss.backward();
  REQUIRE(after_forward == 4);  // sin, mm, cos, sum
  REQUIRE(asked == after_forward);
  REQUIRE(seen == std::vector<std::string>{"aten::sin", "aten::mm", "aten::cos", "aten::sum"});
}

TEST_CASE("a mutated cache entry is an error unless allowed", "[sac]") {
  for (bool allow : {false, true}) {
    DYNAMIC_SECTION("allow_cache_entry_mutation = " << allow) {
      Tensor x = randn({4, 4}).requires_grad_();
      Tensor w = randn({4, 4}).requires_grad_();
      auto fn = [&](const std::vector<Tensor>& in) {
        Tensor p = mm(in[0], w);
        return std::vector<Tensor>{p, p.sin()};
      };
      std::vector<Tensor> out = checkpoint(fn, {x}, sac([allow] {
        return create_selective_checkpoint_contexts({"aten::mm"}, allow);
      }));
      {
        autograd::NoGradGuard no_grad;
        out[0].mul_(2.0);  // the returned mm output shares its version counter with the cache
      }
      if (allow) {
        REQUIRE_NOTHROW(out[1].sum().backward());
      } else {
        REQUIRE_THROWS_WITH(out[1].sum().backward(),
                            Catch::Contains("Tensor cached during selective activation checkpoint has been mutated"));
      }
    }
  }
}

TEST_CASE("a Tensor[] return is cached element by element: detached and checked for mutation", "[sac]") {
  // forward: {x * 2, x * 3}, one op returning a tensor list (as custom ops do)
  static CustomOp& pair = [] () -> CustomOp& {
    CustomOp& op = custom_op("remat_test::sac_pair", [](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{in[0] * 2.0, in[0] * 3.0};
    });
    op.register_autograd(
        [](autograd::AutogradContext*, const std::vector<Tensor>& grads) {
          return std::vector<Tensor>{grads[0] * 2.0 + grads[1] * 3.0};
        },
        nullptr);
    return op;
  }();
  for (bool mutate : {false, true}) {
    DYNAMIC_SECTION("mutate = " << mutate) {
      Tensor x = randn({4}).requires_grad_();
      std::vector<Tensor> kept;  // the op's outputs in the forward run
      auto fn = [&](const Tensor& h) {
        std::vector<Tensor> o = pair({h});
        if (kept.empty()) kept = o;
        return (o[0].sin() + o[1].sin()).exp().sum();  // exp's output is not kept: backward reruns
      };
      Tensor loss =
          checkpoint(fn, x, sac([] { return create_selective_checkpoint_contexts({"remat_test::sac_pair"}); }));
      auto node = kept[1].grad_fn();
      if (!mutate) {
        loss.backward();
        REQUIRE(kept[1].grad_fn() == node);  // the replayed call's recording left the forward's outputs alone
        Tensor xd = x.detach();
        Tensor e = ((xd * 2.0).sin() + (xd * 3.0).sin()).exp();
        REQUIRE(allclose(x.grad(), e * ((xd * 2.0).cos() * 2.0 + (xd * 3.0).cos() * 3.0)));
      } else {
        {
          autograd::NoGradGuard no_grad;
          kept[1].mul_(2.0);  // shares its version counter with the cached element
        }
        REQUIRE_THROWS_MATCHES(loss.backward(), Error,
                               What(Catch::Contains("Tensor cached during selective activation checkpoint has been "
                                                    "mutated (output 1 of remat_test::sac_pair #0")));
      }
    }
  }
}

TEST_CASE("backward twice through a SAC region with retain_graph", "[sac]") {
  Tensor x = randn({4, 4}).requires_grad_();
  // exp's output is saved and not kept: backward reruns the region, replaying (consuming) mm.
  Tensor loss = checkpoint([](const Tensor& h) { return mm(h, h).sin().exp().sum(); }, x,
                           sac([] { return create_selective_checkpoint_contexts({"aten::mm"}); }));
  loss.backward({}, /*retain_graph=*/true);
  REQUIRE_THROWS_WITH(loss.backward(), Catch::Contains("Trying to backward an extra time. You are only allowed to "
                                                       "backward once on any region computed under selective "
                                                       "activation checkpoint."));
}

TEST_CASE("a nondeterministic region: the op is not in storage", "[sac]") {
  Tensor x = randn({4, 4}).requires_grad_();
  bool first = true;
  auto fn = [&](const Tensor& h) {
    // exp's output is saved and not kept, so backward reruns the region.
    Tensor y = first ? h.sin().exp().sum() : h.cos().sin().exp().sum();
    first = false;
    return y;
  };
  // Early stop off: with it on, cos would save its input, fill the only holder and stop the
  // rerun before the cached mode ever sees it.
  CheckpointOptions o = sac([] { return create_selective_checkpoint_contexts({"aten::sin"}); }, false);
  o.determinism_check = "none";
  Tensor loss = checkpoint(fn, x, o);
  REQUIRE_THROWS_WITH(loss.backward(), Catch::Contains("aten::cos encountered during backward but not found in "
                                                       "storage") &&
                                           Catch::Contains("likely nondeterministic"));
}

TEST_CASE("stored outputs are freed after backward and when outputs are dropped", "[sac][memory]") {
  Tensor x = randn({128, 128}).requires_grad_();
  int64_t base = memory_allocated();
  auto ctx = [] { return create_selective_checkpoint_contexts(policies::save_all()); };
  {
    Tensor loss = checkpoint([](const Tensor& h) { return mm(h, h).sin().exp().sum(); }, x, sac(ctx));
    loss.backward();
    x.set_grad(Tensor());
  }
  REQUIRE(memory_allocated() == base);
  {
    Tensor loss = checkpoint([](const Tensor& h) { return mm(h, h).sin().exp().sum(); }, x, sac(ctx));
    REQUIRE(memory_allocated() > base);
  }  // dropped without backward
  REQUIRE(memory_allocated() == base);
}

TEST_CASE("random ops: saved ones replay, recomputed ones see the restored RNG", "[sac][rng]") {
  manual_seed(3);
  Tensor x = randn({16, 16}).requires_grad_();
  // rand() is uniform_ on a fresh tensor: a mutating op, so SAC always reruns it.
  auto fn = [](const Tensor& h) { return mm(h, rand({16, 16})).sin().sum(); };
  RngState start = get_rng_state();
  fn(x).backward();
  Tensor expected = x.grad().clone();
  for (const char* op : {"aten::mm", "aten::sin"}) {
    x.set_grad(Tensor());
    set_rng_state(start);
    checkpoint(fn, x, sac([op] { return create_selective_checkpoint_contexts({op}); })).backward();
    INFO("saving " << op);
    REQUIRE(equal(x.grad(), expected));
  }
}

TEST_CASE("nested SAC regions each follow their own policy", "[sac][nested]") {
  Tensor x = from_vector({0.1, 0.2, 0.3, 0.4}, {2, 2}, kDouble).requires_grad_();
  auto inner = [](const Tensor& h) { return mm(h, h).sin(); };
  auto outer = [&](const Tensor& h) {
    Tensor a = h.cos();
    Tensor b = checkpoint(inner, a, sac([] { return create_selective_checkpoint_contexts({"aten::mm"}); }));
    return mm(b, a).sin().sum();
  };
  Tensor expected = autograd::grad({inner(x.cos()).mm(x.cos()).sin().sum()}, {x})[0];
  std::vector<std::string> outer_ops_seen;
  reset_checkpoint_stats();
  Tensor loss = checkpoint(outer, x, sac([&] {
    return create_selective_checkpoint_contexts(
        PolicyFn([&](const SelectiveCheckpointContext&, const OperatorHandle& op, const std::vector<IValue>&) {
          outer_ops_seen.push_back(op.name());
          return op.name() == "aten::cos" ? CheckpointPolicy::MUST_SAVE : CheckpointPolicy::PREFER_RECOMPUTE;
        }));
  }));
  // The outer policy never sees the inner region's ops (only cos, mm, sin, sum of its own).
  REQUIRE(outer_ops_seen == std::vector<std::string>{"aten::cos", "aten::mm", "aten::sin", "aten::sum"});
  Tensor got = autograd::grad({loss}, {x})[0];
  REQUIRE(allclose(got, expected, 1e-12, 1e-12));
  CheckpointStats stats = checkpoint_stats();
  // outer keeps cos; the inner region keeps its mm
  REQUIRE(stats.total.sac_tensors_saved >= 2);
}

TEST_CASE("SAC accounting: replays, recomputed calls, FLOPs", "[sac][stats]") {
  Tensor x = randn({64, 64}).requires_grad_();
  reset_checkpoint_stats();
  // exp's output is saved and not kept: backward reruns the region (early stop off: to the end).
  Tensor loss = checkpoint([](const Tensor& h) { return mm(h, h).sin().exp().sum(); }, x,
                           sac([] { return create_selective_checkpoint_contexts({"aten::mm"}); }, false));
  loss.backward();
  CheckpointStats s = checkpoint_stats();
  REQUIRE(s.regions.size() == 1);
  const CheckpointRegionStats& r = s.regions[0];
  REQUIRE(r.recomputations == 1);
  REQUIRE(r.ops_replayed == 1);                       // mm from the cache
  REQUIRE(r.replayed_by_op.at("aten::mm") == 1);
  REQUIRE(r.recomputed_by_op.at("aten::sin") == 1);   // early stop off: sin, exp and sum rerun
  REQUIRE(r.recomputed_by_op.at("aten::exp") == 1);
  REQUIRE(r.recomputed_by_op.at("aten::sum") == 1);
  REQUIRE(r.flops_recomputed == 2 * 64.0 * 64 + 1);   // one per output element
  REQUIRE(r.sac_tensors_saved == 1);
  REQUIRE(r.sac_bytes_saved == 64 * 64 * 4);
  REQUIRE(r.sac_bytes_held == 0);                     // consumed
  REQUIRE(r.holder_bytes_held == 0);                  // every recomputed tensor was taken
  REQUIRE(r.tensors_packed == 4);                     // mm: x, x; sin: mm's output; exp: its output
}

TEST_CASE("a region whose backward needs only what SAC kept (or what it did not make) is never rerun", "[sac]") {
  Tensor x = randn({8, 8}).requires_grad_();
  Tensor w = randn({8, 8}).requires_grad_();
  auto fn = [&](const Tensor& h) { return mm(h, w).sin().sum(); };
  Tensor expected_loss = fn(x);
  expected_loss.backward();
  Tensor gx = x.grad(), gw = w.grad();
  x.set_grad(Tensor());
  w.set_grad(Tensor());
  reset_checkpoint_stats();
  // mm saves x (the region's input) and w (a leaf); sin saves mm's output, which SAC keeps.
  Tensor loss = checkpoint(fn, x, sac([] { return create_selective_checkpoint_contexts({"aten::mm"}); }));
  loss.backward();
  CheckpointStats s = checkpoint_stats();
  CHECK(s.total.recomputations == 0);
  CHECK(s.total.ops_recomputed == 0);
  CHECK(equal(x.grad(), gx));
  CHECK(equal(w.grad(), gw));
  // Keeping sin's input alone is not enough once exp's output is needed too: one rerun, which
  // stops right after exp (sum is never run again).
  x.set_grad(Tensor());
  reset_checkpoint_stats();
  Tensor loss2 = checkpoint([&](const Tensor& h) { return mm(h, w).sin().exp().sum(); }, x,
                            sac([] { return create_selective_checkpoint_contexts({"aten::mm"}); }));
  loss2.backward();
  s = checkpoint_stats();
  CHECK(s.total.recomputations == 1);
  CHECK(s.total.ops_replayed == 1);  // mm
  CHECK(s.total.recomputed_by_op.count("aten::sum") == 0);
  CHECK(s.total.recomputed_by_op.at("aten::exp") == 1);
}

TEST_CASE("a leaf saved by a never-rerun region and changed in place fails the version check", "[sac][errors]") {
  Tensor x = randn({4, 4}).requires_grad_();
  Tensor w = randn({4, 4}).requires_grad_();
  Tensor loss = checkpoint([&](const Tensor& h) { return mm(h, w).sin().sum(); }, x,
                           sac([] { return create_selective_checkpoint_contexts({"aten::mm"}); }));
  {
    autograd::NoGradGuard no_grad;
    w.mul_(2.0);
  }
  REQUIRE_THROWS_WITH(loss.backward(), Catch::Contains("one of the variables needed for gradient computation has been "
                                                       "modified by an inplace operation") &&
                                           Catch::Contains("is at version 2; expected version 1"));  // randn filled it: version 1
}

TEST_CASE("a policy that saves a list-returning op (unbind) replays its views", "[sac]") {
  Tensor x = randn({3, 4}).requires_grad_();
  auto fn = [](const Tensor& a) {
    std::vector<Tensor> rows = unbind(a.sin(), 0);
    return (rows[0] * rows[2]).sum();
  };
  Tensor want = fn(x);
  want.backward();
  Tensor want_grad = x.grad();
  x.set_grad(Tensor());
  auto ctx = sac([] { return create_selective_checkpoint_contexts({"aten::unbind.int", "aten::sin"}); });
  Tensor got = checkpoint(fn, x, ctx);
  CHECK(equal(got, want));
  got.backward();
  CHECK(equal(x.grad(), want_grad));
}
