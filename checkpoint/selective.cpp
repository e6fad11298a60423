// Mirrors torch/utils/checkpoint.py (_CachingTorchDispatchMode, _CachedTorchDispatchMode,
// _VersionWrapper, create_selective_checkpoint_contexts).
#include "checkpoint/selective.h"

#include <unordered_map>

#include "checkpoint/scope.h"
#include "checkpoint/selective_offload.h"
#include "checkpoint/stats_detail.h"
#include "checkpoint/tensor_returns.h"
#include "checkpoint/trace.h"
#include "ops/functions.h"

namespace remat {

const char* toString(CheckpointPolicy p) {
  switch (p) {
    case CheckpointPolicy::MUST_SAVE: return "MUST_SAVE";
    case CheckpointPolicy::PREFER_SAVE: return "PREFER_SAVE";
    case CheckpointPolicy::MUST_RECOMPUTE: return "MUST_RECOMPUTE";
    case CheckpointPolicy::PREFER_RECOMPUTE: return "PREFER_RECOMPUTE";
    case CheckpointPolicy::MUST_CPU_OFFLOAD: return "MUST_CPU_OFFLOAD";
    case CheckpointPolicy::PREFER_CPU_OFFLOAD: return "PREFER_CPU_OFFLOAD";
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
  std::vector<int64_t> versions;  // version of each tensor when cached, a Tensor[]'s elements in order
  int64_t bytes = 0;
  int64_t seq = 0;                // the call's place among all the region's forward calls
  // Kind Saved, offloaded: the tensors of `values` live in host memory, in the storage's
  // offloads under this index, and `values` holds undefined tensors in their places until the
  // replay. -1: nothing offloaded.
  int64_t offloaded = -1;
};

// The storage both modes of one checkpoint call share.
struct Storage {
  std::unordered_map<const OperatorEntry*, std::vector<CacheEntry>> entries;
  int64_t region = 0;
  // Storages the region's op calls produced in forward, and whether SAC keeps each (a saved
  // tensor of a storage not listed here existed before the region: a parameter, an input). Keyed
  // by StorageImpl::id, not address: a storage freed in the region leaves its entry behind, and a
  // later storage at the same address is not the same tensor.
  std::unordered_map<uint64_t, bool> produced;
  int64_t calls = 0;  // forward calls decided so far
  RegionOffloads offloads;  // what the region's calls offloaded (checkpoint/selective_offload.h)
  void release(CacheEntry& e) {
    if (e.bytes != 0) {
      stats_detail::Update(region)->sac_bytes_held -= e.bytes;
      e.bytes = 0;
    }
    e.values.clear();
    offloads.drop(e.offloaded);
  }
  ~Storage() {
    for (auto& kv : entries)
      for (CacheEntry& e : kv.second) release(e);
  }
};

// The storage's offloads, sharing the storage's lifetime (the thread's registry holds them weakly).
std::shared_ptr<RegionOffloads> offloads_of(const std::shared_ptr<Storage>& s) {
  return std::shared_ptr<RegionOffloads>(s, &s->offloads);
}

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
    e.seq = storage_->calls++;
    // A mutating op's return is its (possibly fresh) argument: it always reruns.
    const bool mutating = op.schema().is_mutable();
    bool save = is_save(policy) && !mutating;
    bool offload = false;
    std::string w;  // where(...), for an offload answer's messages
    if (is_offload(policy) && !mutating) {
      w = where(ctx.scope, op, idx);
      offload = storage_->offloads.decide(storage_->region, policy, w, args, out);
      save = !offload;  // otherwise it acts as SAVE
    }
    if (offload) {
      e.kind = CacheEntry::Kind::Saved;
      e.values = out;
      const bool first = storage_->offloads.empty();
      const int64_t bytes = storage_->offloads.add(storage_->region, w, e.values, &e.offloaded);
      if (first) register_offload_region(offloads_of(storage_));
      if (stats_detail::PlanningObserver* o = stats_detail::planning_observer())
        o->offloaded(storage_->region, ctx.scope, op, idx, bytes);
      if (checkpoint_trace_enabled())
        trace::emit("sac #" + std::to_string(storage_->region) + ": policy " + w + " -> " + toString(policy) +
                    " (output offloaded to pinned host memory, " + std::to_string(bytes) +
                    " bytes; its device copy is released when the region's forward ends)");
    } else if (save) {
      e.kind = CacheEntry::Kind::Saved;
      // Detached, so that autograd recording the recomputed call never rewires the forward's outputs.
      e.values = out;
      int64_t tensors = 0;
      for_each_tensor(e.values, [&](Tensor& t) {
        if (!t.defined()) return;
        t = detach(t);
        claim_memory(t, MemoryCategory::Activation);
        e.versions.push_back(t._version());
        e.bytes += t.nbytes();
        ++tensors;
      });
      stats_detail::Update s(storage_->region);
      s->sac_tensors_saved += tensors;
      s->sac_bytes_saved += e.bytes;
      s->sac_bytes_held += e.bytes;
    } else {
      e.kind = CacheEntry::Kind::Recompute;
    }
    record_produced(args, out, save);
    if (stats_detail::PlanningObserver* o = stats_detail::planning_observer())
      o->forward_call(storage_->region, ctx.scope, op, idx, args, out, save);
    if (offload) return out;
    if (checkpoint_trace_enabled()) {
      trace::emit("sac #" + std::to_string(storage_->region) + ": policy " + where(ctx.scope, op, idx) + " -> " +
                  toString(policy) + (save ? " (output kept, " + std::to_string(e.bytes) + " bytes)" : " (recompute)"));
    }
    return out;
  }

 private:
  // A new storage is produced here (a view of an input's or of an earlier output's is not); a
  // kept alias keeps its storage alive, so it counts as kept.
  void record_produced(const std::vector<IValue>& args, const std::vector<IValue>& out, bool save) {
    std::vector<Tensor> outputs;
    for (const IValue& v : out) {
      if (v.isTensor()) outputs.push_back(v.toTensor());
      else if (v.isTensorList())
        for (const Tensor& t : v.toTensorListRef()) outputs.push_back(t);
    }
    for (const Tensor& t : outputs) {
      if (!t.defined()) continue;
      const StorageImpl* st = t.impl()->storage().get();
      auto it = storage_->produced.find(st->id());
      if (it != storage_->produced.end()) {
        it->second = it->second || save;
        continue;
      }
      bool from_input = false;
      for (const IValue& a : args)
        if (a.isTensor() && a.toTensor().defined() && a.toTensor().impl()->storage().get() == st) from_input = true;
      if (!from_input) storage_->produced.emplace(st->id(), save);
    }
  }

  PolicyFn policy_;
};

// _CachedTorchDispatchMode: recomputation.
class CachedMode : public SelectiveMode {
 public:
  CachedMode(std::shared_ptr<Storage> storage, bool allow_cache_entry_mutation)
      : SelectiveMode(std::move(storage)), allow_mutation_(allow_cache_entry_mutation) {}

  // Each rerun counts from zero (so a second backward hits "extra time", not "not found").
  void enter() override {
    func_counter_.clear();
    prefetch_for_recompute(offloads_of(storage_), storage_->region);
  }

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
    if (storage_->offloads.holds(e.offloaded)) {
      // Offloaded: back from host memory (prefetched when a recompute started, or now).
      storage_->offloads.take(e.offloaded, e.values);
      return replay(e, op, idx, "replayed from host memory, not recomputed");
    }
    size_t i = 0;
    for_each_tensor(e.values, [&](Tensor& t) {
      if (!t.defined()) return;
      if (!allow_mutation_ && t._version() != e.versions[i]) {
        throw Error("Tensor cached during selective activation checkpoint has been mutated (output " +
                    std::to_string(i) + " of " + op.name() + " #" + std::to_string(idx) + ", version " +
                    std::to_string(e.versions[i]) + " when cached, now " + std::to_string(t._version()) + ")");
      }
      ++i;
    });
    return replay(e, op, idx, "replayed, not recomputed");
  }

  bool allow_mutation() const { return allow_mutation_; }

 private:
  // Hands a kept entry's values out (once) and counts the call as replayed.
  std::vector<IValue> replay(CacheEntry& e, const OperatorHandle& op, int64_t idx, const char* how) {
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
                  " (" + how + ")");
    return out;
  }

  bool allow_mutation_;
};

}  // namespace

std::function<SavedTensorKeep(const Tensor&)> keep_direct_fn(const CheckpointContexts& contexts) {
  auto* m = dynamic_cast<SelectiveMode*>(contexts.forward.get());
  if (m == nullptr) return {};
  auto* cached = dynamic_cast<CachedMode*>(contexts.recompute.get());
  const bool allow_mutation = cached != nullptr && cached->allow_mutation();
  std::weak_ptr<Storage> storage = m->storage_;
  return [storage, allow_mutation](const Tensor& t) {
    auto s = storage.lock();
    if (!s || !t.defined()) return SavedTensorKeep::Drop;
    auto it = s->produced.find(t.impl()->storage()->id());
    if (it == s->produced.end()) return SavedTensorKeep::NotProducedHere;
    if (!it->second) return SavedTensorKeep::Drop;
    return allow_mutation ? SavedTensorKeep::KeptBySacMutable : SavedTensorKeep::KeptBySac;
  };
}

void forward_done(const CheckpointContexts& contexts) {
  if (auto* m = dynamic_cast<SelectiveMode*>(contexts.forward.get())) {
    m->storage_->produced.clear();
    m->storage_->offloads.release_device_tensors();
  }
}

int64_t forward_calls(const CheckpointContexts& contexts) {
  auto* m = dynamic_cast<SelectiveMode*>(contexts.forward.get());
  return m == nullptr ? 0 : m->storage_->calls;
}

void release_calls_from(const CheckpointContexts& contexts, int64_t seq) {
  auto* m = dynamic_cast<SelectiveMode*>(contexts.forward.get());
  if (m == nullptr) return;
  for (auto& kv : m->storage_->entries) {
    for (CacheEntry& e : kv.second) {
      if (e.seq < seq || e.kind != CacheEntry::Kind::Saved) continue;
      if (stats_detail::PlanningObserver* o = stats_detail::planning_observer()) o->released(m->storage_->region, e.seq);
      m->storage_->release(e);
      e.kind = CacheEntry::Kind::Recompute;  // never reached by a rerun that stops early
    }
  }
}

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
