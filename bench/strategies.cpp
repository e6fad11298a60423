// Strategy definitions for bench/memory_vs_recompute.
#include "bench/strategies.h"

#include <memory>
#include <sstream>

namespace remat::bench {

namespace {
bool is_op(const OperatorHandle& op, const char* name) { return op.name() == name; }
bool is_linear_matmul(const OperatorHandle& op) { return is_op(op, "aten::mm") || is_op(op, "aten::addmm"); }
// The fused attention op of each device (ops/attention.cpp picks by the device in use, and on
// Meta by the device a dry run counts like): the policies name both.
constexpr const char* kFusedAttentionCpu = "aten::_scaled_dot_product_flash_attention_for_cpu";
constexpr const char* kFusedAttentionCuda = "aten::_scaled_dot_product_efficient_attention";
bool is_fused_attention(const OperatorHandle& op) {
  return is_op(op, kFusedAttentionCpu) || is_op(op, kFusedAttentionCuda);
}
}  // namespace

PolicyFn save_matmuls_and_attention() {
  return policies::save_ops({"aten::mm", "aten::bmm", "aten::addmm", kFusedAttentionCpu, kFusedAttentionCuda});
}

PolicyFn titan_policy() {
  // torchtitan's default SAC policy saves every other mm and the SDPA op's output. With the fused
  // backend that is the fused op (both outputs); with the math composite "the SDPA output" is its
  // second bmm (scores x V). The policy object is created per checkpoint call (context_fn), so the
  // counter runs per block.
  auto linear_calls = std::make_shared<int64_t>(0);
  return [linear_calls](const SelectiveCheckpointContext& ctx, const OperatorHandle& op, const std::vector<IValue>&) {
    if (is_linear_matmul(op)) {
      return (*linear_calls)++ % 2 == 0 ? CheckpointPolicy::MUST_SAVE : CheckpointPolicy::PREFER_RECOMPUTE;
    }
    if (is_op(op, "aten::bmm") && ctx.index == 1) return CheckpointPolicy::MUST_SAVE;
    if (is_fused_attention(op)) return CheckpointPolicy::MUST_SAVE;
    return CheckpointPolicy::PREFER_RECOMPUTE;
  };
}

ModelScopes ModelScopes::of(const std::string& model) {
  if (model == "llama") return {"*.attention.inner_attention", "*.attention.wo", "*.feed_forward.w2"};
  return {"*.attn.core", "*.attn.proj", "*.mlp.fc2"};
}

PolicyFn no_fc2_policy(const ModelScopes& scopes) {
  return policies::compose({policies::recompute_scopes({scopes.mlp_out}), save_matmuls_and_attention()});
}

PolicyFn megatron_policy(const ModelScopes& scopes) {
  // Megatron-LM's "selective" recompute: keep what backward needs, recompute only the attention
  // core (scores, masked softmax, dropout, scores x V). Outputs backward never reads (the
  // projections' outputs feeding residual adds, the adds themselves) are recomputed too, and
  // views are never cached (a cached view would keep its base alive).
  return [scopes](const SelectiveCheckpointContext& ctx, const OperatorHandle& op, const std::vector<IValue>&) {
    if (scope_matches(scopes.attention_core, ctx.scope)) return CheckpointPolicy::MUST_RECOMPUTE;
    if (scope_matches(scopes.attention_out, ctx.scope) || scope_matches(scopes.mlp_out, ctx.scope))
      return CheckpointPolicy::MUST_RECOMPUTE;
    if (policies::is_view_op(op) || is_op(op, "aten::add")) return CheckpointPolicy::PREFER_RECOMPUTE;
    // RMSNorm's CPU composite adds eps to mean's output in place (add_): a cached output that then
    // changes, which SAC refuses in recompute (PyTorch's too). add_'s output, the same tensor after
    // the change, is kept instead, so mean's is recomputed (and unread: rsqrt reads add_'s).
    if (is_op(op, "aten::mean")) return CheckpointPolicy::PREFER_RECOMPUTE;
    return CheckpointPolicy::PREFER_SAVE;
  };
}

std::vector<Strategy> all_strategies(const std::string& model) {
  REMAT_CHECK(model == "gpt" || model == "llama", "all_strategies: the model must be gpt or llama, got '", model, "'");
  using AC = nn::ActivationCheckpointing;
  const ModelScopes scopes = ModelScopes::of(model);
  const bool llama = model == "llama";
  auto sac = [](std::function<PolicyFn()> make) {
    return AC::selective(std::function<CheckpointContexts()>([make] {
      return create_selective_checkpoint_contexts(make());
    }));
  };
  return {
      {"none", "no checkpointing", AC::none(), false},
      {"full", "every block, non-reentrant", AC::full(false), false},
      {"full-reentrant", "every block, reentrant", AC::full(true), true},
      {"every2", "blocks 0, 2, ... (non-reentrant)", AC::every_nth(2, false), false},
      {"sac-mm", "SAC: save every matmul", sac(save_matmuls_and_attention), false},
      {"sac-titan", "SAC: every other linear mm + attention out", sac(titan_policy), false},
      {llama ? "sac-no-w2" : "sac-no-fc2",
       llama ? "SAC: every matmul but feed_forward.w2 (by scope)" : "SAC: every matmul but mlp.fc2 (by scope)",
       sac([scopes] { return no_fc2_policy(scopes); }), false},
      {"sac-megatron", "SAC: recompute only the attention core", sac([scopes] { return megatron_policy(scopes); }),
       false},
  };
}

std::vector<Strategy> select_strategies(const std::string& csv, const std::string& model) {
  std::vector<Strategy> all = all_strategies(model), out;
  std::stringstream ss(csv);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.empty()) continue;
    bool found = false;
    for (const Strategy& s : all) {
      if (s.name == name) {
        out.push_back(s);
        found = true;
      }
    }
    if (!found) {
      std::string known;
      for (const Strategy& s : all) known += (known.empty() ? "" : ", ") + s.name;
      throw Error("--strategies: unknown strategy " + cli_detail::quoted(name) + "; known: " + known);
    }
  }
  REMAT_CHECK(!out.empty(), "--strategies: no strategy selected");
  return out;
}

}  // namespace remat::bench
