// Policy helpers (see policies.h).
#include "checkpoint/policies.h"

#include <unordered_map>

#include "checkpoint/scope.h"

namespace remat::policies {

namespace {
std::vector<OperatorHandle> resolve(const std::vector<std::string>& names, const char* who) {
  std::vector<OperatorHandle> ops;
  for (const std::string& n : names) {
    auto op = Dispatcher::singleton().findOp(n);
    if (!op) {
      std::string hint;
      for (const std::string& c : closest_op_names(n)) hint += (hint.empty() ? "" : ", ") + c;
      throw Error(std::string("policies::") + who + ": '" + n + "' is not a registered op. Closest registered names: " + hint);
    }
    ops.push_back(*op);
  }
  return ops;
}
bool contains(const std::vector<OperatorHandle>& ops, const OperatorHandle& op) {
  for (const OperatorHandle& o : ops)
    if (o == op) return true;
  return false;
}
bool any_match(const std::vector<std::string>& globs, const std::string& path) {
  for (const std::string& g : globs)
    if (scope_matches(g, path)) return true;
  return false;
}
}  // namespace

PolicyFn save_ops(const std::vector<std::string>& names) {
  auto ops = resolve(names, "save_ops");
  return [ops](const SelectiveCheckpointContext&, const OperatorHandle& op, const std::vector<IValue>&) {
    return contains(ops, op) ? CheckpointPolicy::MUST_SAVE : CheckpointPolicy::PREFER_RECOMPUTE;
  };
}

PolicyFn offload_ops(const std::vector<std::string>& names) {
  auto ops = resolve(names, "offload_ops");
  return [ops](const SelectiveCheckpointContext&, const OperatorHandle& op, const std::vector<IValue>&) {
    return contains(ops, op) ? CheckpointPolicy::MUST_CPU_OFFLOAD : CheckpointPolicy::PREFER_RECOMPUTE;
  };
}

PolicyFn offload_scopes(const std::vector<std::string>& globs) {
  return [globs](const SelectiveCheckpointContext& ctx, const OperatorHandle&, const std::vector<IValue>&) {
    return any_match(globs, ctx.scope) ? CheckpointPolicy::MUST_CPU_OFFLOAD : CheckpointPolicy::PREFER_RECOMPUTE;
  };
}

PolicyFn save_matmuls() { return save_ops({"aten::mm", "aten::bmm", "aten::addmm"}); }

PolicyFn save_every_other(const std::vector<std::string>& names) {
  auto ops = resolve(names, "save_every_other");
  return [ops](const SelectiveCheckpointContext& ctx, const OperatorHandle& op, const std::vector<IValue>&) {
    if (!contains(ops, op)) return CheckpointPolicy::PREFER_RECOMPUTE;
    // index counts this op's calls in the region: save the 1st, 3rd, 5th ... (torchtitan).
    return ctx.index % 2 == 0 ? CheckpointPolicy::MUST_SAVE : CheckpointPolicy::PREFER_RECOMPUTE;
  };
}

PolicyFn recompute_scopes(const std::vector<std::string>& globs) {
  return [globs](const SelectiveCheckpointContext& ctx, const OperatorHandle&, const std::vector<IValue>&) {
    return any_match(globs, ctx.scope) ? CheckpointPolicy::MUST_RECOMPUTE : CheckpointPolicy::PREFER_SAVE;
  };
}

PolicyFn save_scopes(const std::vector<std::string>& globs) {
  return [globs](const SelectiveCheckpointContext& ctx, const OperatorHandle&, const std::vector<IValue>&) {
    return any_match(globs, ctx.scope) ? CheckpointPolicy::MUST_SAVE : CheckpointPolicy::PREFER_RECOMPUTE;
  };
}

PolicyFn save_all() {
  return [](const SelectiveCheckpointContext&, const OperatorHandle&, const std::vector<IValue>&) {
    return CheckpointPolicy::PREFER_SAVE;
  };
}

PolicyFn recompute_all() {
  return [](const SelectiveCheckpointContext&, const OperatorHandle&, const std::vector<IValue>&) {
    return CheckpointPolicy::PREFER_RECOMPUTE;
  };
}

bool is_view_op(const OperatorHandle& op) {
  return op.hasSchema() && !op.schema().is_mutable() && op.schema().is_aliasing_return(0);
}

PolicyFn compose(std::vector<PolicyFn> policies) {
  REMAT_CHECK(!policies.empty(), "policies::compose: no policies given");
  return [policies](const SelectiveCheckpointContext& ctx, const OperatorHandle& op, const std::vector<IValue>& args) {
    CheckpointPolicy answer = CheckpointPolicy::PREFER_RECOMPUTE;
    for (const PolicyFn& policy : policies) {
      answer = policy(ctx, op, args);
      if (is_must(answer)) return answer;
    }
    return answer;  // the last policy's (non-decisive) answer
  };
}

}  // namespace remat::policies
