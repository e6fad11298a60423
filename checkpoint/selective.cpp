// Mirrors torch/utils/checkpoint.py (_CachingTorchDispatchMode, _CachedTorchDispatchMode,
// _VersionWrapper, create_selective_checkpoint_contexts).
#include "checkpoint/selective.h"

#include <unordered_map>

#include "checkpoint/scope.h"
#include "checkpoint/stats.h"
#include "checkpoint/trace.h"
#include "ops/functions.h"

namespace remat {

const char* toString(CheckpointPolicy p) {
  switch (p) {
    case CheckpointPolicy::MUST_SAVE: return "MUST_SAVE";
    case CheckpointPolicy::PREFER_SAVE: return "PREFER_SAVE";
    case CheckpointPolicy::MUST_RECOMPUTE: return "MUST_RECOMPUTE";
    case CheckpointPolicy::PREFER_RECOMPUTE: return "PREFER_RECOMPUTE";
  }
  return "?";
}

PolicyFn policy_from_bool(BoolPolicyFn fn) {
  REMAT_CHECK(static_cast<bool>(fn), "policy_from_bool: empty policy");
  return [fn = std::move(fn)](const SelectiveCheckpointContext& ctx, const OperatorHandle& op,
                              const std::vector<IValue>& args) {
    return fn(ctx, op, args) ? CheckpointPolicy::MUST_SAVE : CheckpointPolicy::PREFER_RECOMPUTE;
  };
}

namespace sac_detail {

bool is_ignored(const OperatorHandle& op) {
  static const OperatorHandle detach_op = find_op("aten::detach");
  return op == detach_op;
}

namespace {

const char* const kMismatch =
    "This can happen if the operations in the checkpointed region are nondeterministic or depend on global state "
    "that changed between forward and backward (the region is likely nondeterministic).";

// One op call's cache slot (PyTorch: _VersionWrapper values, or _RECOMPUTE / _CONSUMED).
struct CacheEntry {
  enum class Kind { Recompute, Saved, Consumed } kind = Kind::Recompute;
  std::vector<IValue> values;     // detached outputs (share storage and version counter)
  std::vector<int64_t> versions;  // version of each tensor when cached
  int64_t bytes = 0;
};

// The storage both modes of one checkpoint call share.
struct Storage {
  std::unordered_map<const OperatorEntry*, std::vector<CacheEntry>> entries;
  int64_t region = 0;
  void release(CacheEntry& e) {
    if (e.bytes != 0) {
      stats_detail::Update(region)->sac_bytes_held -= e.bytes;
      e.bytes = 0;
    }
    e.values.clear();
  }
  ~Storage() {
    for (auto& kv : entries)
      for (CacheEntry& e : kv.second) release(e);
  }
};

// Set while an inner selective mode runs an op it has decided on: outer selective modes then
// pass the call through, so each nested region follows its own policy.
thread_local int tls_decided_by_inner_sac = 0;
struct DecidedGuard {
  DecidedGuard() { ++tls_decided_by_inner_sac; }
  ~DecidedGuard() { --tls_decided_by_inner_sac; }
};

std::string where(const std::string& scope, const OperatorHandle& op, int64_t index) {
  return (scope.empty() ? std::string("<top>") : scope) + " / " + op.name() + " / #" + std::to_string(index);
}

class SelectiveMode : public DispatchMode {
 public:
  explicit SelectiveMode(std::shared_ptr<Storage> storage) : storage_(std::move(storage)) {}
  std::shared_ptr<Storage> storage_;
  std::unordered_map<const OperatorEntry*, int64_t> func_counter_;
};

// _CachingTorchDispatchMode: forward.
class CachingMode : public SelectiveMode {
 public:
  CachingMode(PolicyFn policy, std::shared_ptr<Storage> storage)
      : SelectiveMode(std::move(storage)), policy_(std::move(policy)) {}

  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    if (is_ignored(op) || tls_decided_by_inner_sac > 0) return op.call(args);
    std::vector<IValue> out;
    {
      DecidedGuard decided;
      out = op.call(args);
    }
    int64_t idx = func_counter_[op.entry()]++;
    SelectiveCheckpointContext ctx{/*is_recompute=*/false, current_scope(), idx};
    CheckpointPolicy policy = policy_(ctx, op, args);
    auto& slots = storage_->entries[op.entry()];
    if (slots.size() <= static_cast<size_t>(idx)) slots.resize(static_cast<size_t>(idx) + 1);
    CacheEntry& e = slots[static_cast<size_t>(idx)];
    // A mutating op's return is its (possibly fresh) argument: it always reruns.
    bool save = is_save(policy) && !op.schema().is_mutable();
    if (save) {
      e.kind = CacheEntry::Kind::Saved;
      for (const IValue& v : out) {
        if (v.isTensor()) {
          Tensor d = detach(v.toTensor());
          e.versions.push_back(d._version());
          e.bytes += d.nbytes();
          e.values.emplace_back(d);
        } else if (v.isTensorList()) {  // unbind's views: detached one by one (no version check)
          std::vector<Tensor> list;
          for (const Tensor& t : v.toTensorListRef()) {
            list.push_back(t.defined() ? detach(t) : t);
            e.bytes += t.defined() ? t.nbytes() : 0;
          }
          e.versions.push_back(-1);
          e.values.emplace_back(std::move(list));
        } else {
          e.versions.push_back(-1);
          e.values.push_back(v);
        }
      }
      stats_detail::Update s(storage_->region);
      s->sac_tensors_saved += static_cast<int64_t>(out.size());
      s->sac_bytes_saved += e.bytes;
      s->sac_bytes_held += e.bytes;
    } else {
      e.kind = CacheEntry::Kind::Recompute;
    }
    if (checkpoint_trace_enabled()) {
      trace::emit("sac #" + std::to_string(storage_->region) + ": policy " + where(ctx.scope, op, idx) + " -> " +
                  toString(policy) + (save ? " (output kept, " + std::to_string(e.bytes) + " bytes)" : " (recompute)"));
    }
    return out;
  }

 private:
  PolicyFn policy_;
};

// _CachedTorchDispatchMode: recomputation.
class CachedMode : public SelectiveMode {
 public:
  CachedMode(std::shared_ptr<Storage> storage, bool allow_cache_entry_mutation)
      : SelectiveMode(std::move(storage)), allow_mutation_(allow_cache_entry_mutation) {}

  // Each rerun counts from zero (so a second backward hits "extra time", not "not found").
  void enter() override { func_counter_.clear(); }

  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    if (is_ignored(op) || tls_decided_by_inner_sac > 0) return op.call(args);
    int64_t idx = func_counter_[op.entry()]++;
    auto it = storage_->entries.find(op.entry());
    if (it == storage_->entries.end()) {
      throw Error(op.name() + " encountered during backward but not found in storage. " + kMismatch);
    }
    if (static_cast<size_t>(idx) >= it->second.size()) {
      throw Error(op.name() + " invocation index " + std::to_string(idx) +
                  " encountered during backward but not found in storage. " + kMismatch);
    }
    CacheEntry& e = it->second[static_cast<size_t>(idx)];
    switch (e.kind) {
      case CacheEntry::Kind::Consumed:
        throw Error(
            "Trying to backward an extra time. You are only allowed to backward once on any region computed under "
            "selective activation checkpoint.");
      case CacheEntry::Kind::Recompute: {
        DecidedGuard decided;
        if (checkpoint_trace_enabled())
          trace::emit("sac #" + std::to_string(storage_->region) + ": recompute " + op.name() + " #" + std::to_string(idx));
        return op.call(args);
      }
      case CacheEntry::Kind::Saved:
        break;
    }
    for (size_t i = 0; i < e.values.size(); ++i) {
      if (!allow_mutation_ && e.values[i].isTensor() && e.values[i].toTensor()._version() != e.versions[i]) {
        throw Error("Tensor cached during selective activation checkpoint has been mutated (output " +
                    std::to_string(i) + " of " + op.name() + " #" + std::to_string(idx) + ", version " +
                    std::to_string(e.versions[i]) + " when cached, now " +
                    std::to_string(e.values[i].toTensor()._version()) + ")");
      }
    }
    std::vector<IValue> out = std::move(e.values);
    e.kind = CacheEntry::Kind::Consumed;
    storage_->release(e);
    {
      stats_detail::Update s(storage_->region);
      s->ops_replayed += 1;
      s->replayed_by_op[op.name()] += 1;
    }
    if (checkpoint_trace_enabled())
      trace::emit("sac #" + std::to_string(storage_->region) + ": cache hit " + op.name() + " #" + std::to_string(idx) +
                  " (replayed, not recomputed)");
    return out;
  }

 private:
  bool allow_mutation_;
};

}  // namespace

void bind_region(const CheckpointContexts& contexts, int64_t region) {
  for (const auto& mode : {contexts.forward, contexts.recompute}) {
    if (auto* m = dynamic_cast<SelectiveMode*>(mode.get())) m->storage_->region = region;
  }
}

}  // namespace sac_detail

CheckpointContexts create_selective_checkpoint_contexts(PolicyFn policy, bool allow_cache_entry_mutation) {
  REMAT_CHECK(static_cast<bool>(policy), "create_selective_checkpoint_contexts: the policy function is empty");
  auto storage = std::make_shared<sac_detail::Storage>();
  return CheckpointContexts{std::make_shared<sac_detail::CachingMode>(std::move(policy), storage),
                            std::make_shared<sac_detail::CachedMode>(storage, allow_cache_entry_mutation)};
}

CheckpointContexts create_selective_checkpoint_contexts(BoolPolicyFn policy, bool allow_cache_entry_mutation) {
  return create_selective_checkpoint_contexts(policy_from_bool(std::move(policy)), allow_cache_entry_mutation);
}

CheckpointContexts create_selective_checkpoint_contexts(const std::vector<std::string>& ops_to_save,
                                                        bool allow_cache_entry_mutation) {
  std::vector<OperatorHandle> ops;
  for (const std::string& name : ops_to_save) {
    auto op = Dispatcher::singleton().findOp(name);
    if (!op) {
      std::string hint;
      for (const std::string& n : closest_op_names(name)) hint += (hint.empty() ? "" : ", ") + n;
      throw Error("create_selective_checkpoint_contexts: '" + name +
                  "' in ops_to_save is not a registered op (a list entry that names no op would save nothing). "
                  "Closest registered names: " + hint);
    }
    ops.push_back(*op);
  }
  PolicyFn policy = [ops](const SelectiveCheckpointContext&, const OperatorHandle& op, const std::vector<IValue>&) {
    for (const OperatorHandle& o : ops)
      if (o == op) return CheckpointPolicy::MUST_SAVE;
    return CheckpointPolicy::PREFER_RECOMPUTE;
  };
  return create_selective_checkpoint_contexts(std::move(policy), allow_cache_entry_mutation);
}

}  // namespace remat
