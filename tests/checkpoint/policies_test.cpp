// Tests of checkpoint/policies.cpp.
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

namespace {
CheckpointPolicy ask(const PolicyFn& p, const std::string& op, int64_t index = 0, const std::string& scope = "") {
  SelectiveCheckpointContext ctx{false, scope, index};
  return p(ctx, find_op(op), {});
}
}  // namespace

TEST_CASE("save_ops and save_matmuls", "[policies]") {
  PolicyFn p = policies::save_ops({"aten::sin"});
  REQUIRE(ask(p, "aten::sin") == CheckpointPolicy::MUST_SAVE);
  REQUIRE(ask(p, "aten::cos") == CheckpointPolicy::PREFER_RECOMPUTE);
  PolicyFn m = policies::save_matmuls();
  for (const char* op : {"aten::mm", "aten::bmm", "aten::addmm"}) REQUIRE(ask(m, op) == CheckpointPolicy::MUST_SAVE);
  REQUIRE(ask(m, "aten::mul") == CheckpointPolicy::PREFER_RECOMPUTE);
  REQUIRE_THROWS_WITH(policies::save_ops({"aten.mm"}), Catch::Contains("'aten.mm' is not a registered op") &&
                                                           Catch::Contains("aten::mm"));
}

TEST_CASE("save_every_other: even indices saved", "[policies]") {
  PolicyFn p = policies::save_every_other({"aten::mm"});
  REQUIRE(ask(p, "aten::mm", 0) == CheckpointPolicy::MUST_SAVE);
  REQUIRE(ask(p, "aten::mm", 1) == CheckpointPolicy::PREFER_RECOMPUTE);
  REQUIRE(ask(p, "aten::mm", 2) == CheckpointPolicy::MUST_SAVE);
  REQUIRE(ask(p, "aten::sin", 0) == CheckpointPolicy::PREFER_RECOMPUTE);
}

TEST_CASE("scope globs and compose", "[policies]") {
  PolicyFn everything_but_fc2 =
      policies::compose({policies::recompute_scopes({"*.mlp.fc2"}), policies::save_matmuls()});
  REQUIRE(ask(everything_but_fc2, "aten::mm", 0, "layers.3.mlp.fc2") == CheckpointPolicy::MUST_RECOMPUTE);
  REQUIRE(ask(everything_but_fc2, "aten::mm", 0, "layers.3.mlp.fc1") == CheckpointPolicy::MUST_SAVE);
  REQUIRE(ask(everything_but_fc2, "aten::addmm", 0, "layers.3.attn.qkv") == CheckpointPolicy::MUST_SAVE);
  // No decisive answer: the last policy's (PREFER_RECOMPUTE from save_matmuls).
  REQUIRE(ask(everything_but_fc2, "aten::gelu", 0, "layers.3.mlp") == CheckpointPolicy::PREFER_RECOMPUTE);
  // A default last: everything saved except the carved-out scope.
  PolicyFn all_but_core = policies::compose({policies::recompute_scopes({"*.core"}), policies::save_all()});
  REQUIRE(ask(all_but_core, "aten::_softmax", 0, "layers.0.attn.core") == CheckpointPolicy::MUST_RECOMPUTE);
  REQUIRE(ask(all_but_core, "aten::gelu", 0, "layers.0.mlp") == CheckpointPolicy::PREFER_SAVE);
  PolicyFn s = policies::save_scopes({"layers.?.attn*"});
  REQUIRE(ask(s, "aten::_softmax", 0, "layers.1.attn.core") == CheckpointPolicy::MUST_SAVE);
  REQUIRE(ask(s, "aten::_softmax", 0, "layers.12.attn.core") == CheckpointPolicy::PREFER_RECOMPUTE);
  REQUIRE(ask(policies::save_all(), "aten::sin") == CheckpointPolicy::PREFER_SAVE);
  REQUIRE(ask(policies::recompute_all(), "aten::sin") == CheckpointPolicy::PREFER_RECOMPUTE);
  REQUIRE_THROWS_WITH(policies::compose({}), Catch::Contains("no policies given"));
}

TEST_CASE("the policy sees the scope path and the per-op index", "[policies][scope]") {
  Tensor x = randn({3, 3}).requires_grad_();
  std::vector<std::string> seen;
  CheckpointOptions o;
  o.context_fn = [&] {
    return create_selective_checkpoint_contexts(
        PolicyFn([&](const SelectiveCheckpointContext& ctx, const OperatorHandle& op, const std::vector<IValue>&) {
          seen.push_back(ctx.scope + " / " + op.name() + " / #" + std::to_string(ctx.index));
          return CheckpointPolicy::PREFER_RECOMPUTE;
        }));
  };
  Tensor y = checkpoint([](const Tensor& h) {
    scope layers("layers");
    scope three("3");
    Tensor a;
    {
      scope fc1("mlp");
      scope f("fc1");
      a = mm(h, h);
    }
    scope fc2("mlp.fc2");
    return mm(a, h).sum();
  }, x, o);
  REQUIRE(seen == std::vector<std::string>{"layers.3.mlp.fc1 / aten::mm / #0", "layers.3.mlp.fc2 / aten::mm / #1",
                                           "layers.3.mlp.fc2 / aten::sum / #0"});
}
