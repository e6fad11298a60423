// Mirrors torch/utils/checkpoint.py (_CachingTorchDispatchMode, _CachedTorchDispatchMode,
// _VersionWrapper, create_selective_checkpoint_contexts).
#include "checkpoint/selective.h"

#include <unordered_map>

#include "checkpoint/offload.h"
#include "checkpoint/scope.h"
#include "checkpoint/stats_detail.h"
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
  // Kind Saved, offloaded: the tensors of `values` (in for_each_tensor order) live in host memory
  // here, and `values` holds undefined tensors in their places until the replay.
  std::vector<std::unique_ptr<offload_detail::OffloadedTensor>> offloaded;
  std::string where;              // "scope / op / #index", for messages
};

// Calls fn on each tensor among an op's returns (a Tensor[] return's elements in order).
template <class Fn>
void for_each_tensor(std::vector<IValue>& values, Fn fn) {
  for (IValue& v : values) {
    if (v.isTensor()) {
      fn(v.toTensor());
    } else if (v.isTensorList()) {
      std::vector<Tensor> list = v.toTensorVector();
      for (Tensor& t : list) fn(t);
      v = IValue(std::move(list));
    }
  }
}

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
  // Offloads: the entries that hold some, in forward order (op entry, index), and the device.
  std::vector<std::pair<const OperatorEntry*, int64_t>> offload_order;
  Device offload_device;
  bool offload_as_save_traced = false;  // "the offload policies act as SAVE here", once per region
  CacheEntry& entry(const std::pair<const OperatorEntry*, int64_t>& key) {
    return entries[key.first][static_cast<size_t>(key.second)];
  }
  // Whether some offloaded tensor of the region is still in host memory only.
  bool has_offloads_to_fetch() {
    for (const auto& key : offload_order)
      for (const auto& o : entry(key).offloaded)
        if (o && !o->taken() && !o->on_device()) return true;
    return false;
  }
  // Brings every offloaded tensor of the region back to the device (starts the copies).
  void fetch_offloads() {
    for (const auto& key : offload_order)
      for (const auto& o : entry(key).offloaded)
        if (o) o->fetch();
  }
  // The forward is over: wait for every copy to host, then drop the device tensors.
  void release_offloaded_device_tensors() {
    for (const auto& key : offload_order)
      for (const auto& o : entry(key).offloaded) {
        if (o) o->check_unmodified("the output of " + entry(key).where);
      }
    for (const auto& key : offload_order)
      for (const auto& o : entry(key).offloaded)
        if (o) o->wait_copy();
    for (const auto& key : offload_order)
      for (const auto& o : entry(key).offloaded)
        if (o) o->release_device();
  }
  void release(CacheEntry& e) {
    if (e.bytes != 0) {
      stats_detail::Update(region)->sac_bytes_held -= e.bytes;
      e.bytes = 0;
    }
    e.values.clear();
    e.offloaded.clear();
  }
  ~Storage() {
    for (auto& kv : entries)
      for (CacheEntry& e : kv.second) release(e);
  }
};

// The calling thread's regions that offloaded something, in forward order: a region's recompute
// prefetches the nearest earlier one's offloaded tensors (selective.h, "prefetch point").
thread_local std::vector<std::weak_ptr<Storage>> tls_offload_regions;

void register_offload_region(const std::shared_ptr<Storage>& s) {
  auto& list = tls_offload_regions;
  for (auto it = list.begin(); it != list.end();) it = it->expired() ? list.erase(it) : std::next(it);
  list.push_back(s);
}

// At the start of a region's recompute: its own offloads back now, the previous region's ahead.
void prefetch_for_recompute(const std::shared_ptr<Storage>& self) {
  if (self->offload_order.empty() && tls_offload_regions.empty()) return;
  self->fetch_offloads();
  auto& list = tls_offload_regions;
  size_t me = list.size();
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].lock() == self) me = i;
  if (me == list.size()) {
    // A region without offloads of its own: the previous one is the last earlier region.
    me = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      auto s = list[i].lock();
      if (s && s->region < self->region) me = i + 1;
    }
  }
  for (size_t i = me; i > 0; --i) {
    auto s = list[i - 1].lock();
    if (!s || (!self->offload_order.empty() && s->offload_device.type != self->offload_device.type)) continue;
    if (!s->has_offloads_to_fetch()) continue;
    if (checkpoint_trace_enabled())
      trace::emit("sac #" + std::to_string(self->region) + ": recompute starts; prefetching the offloaded outputs of sac #" +
                  std::to_string(s->region) + " to " + s->offload_device.str());
    s->fetch_offloads();
    break;
  }
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
    std::string why_not_offloaded;
    if (is_offload(policy) && !mutating) {
      offload = true;
      Device device{kCPU};
      bool any = false;
      for_each_tensor(out, [&](Tensor& t) {
        if (!t.defined()) return;
        if (!any) device = t.device();
        any = true;
        if (!offload_supported(t.device())) {
          offload = false;
        } else if (!offload_detail::OffloadedTensor::can_offload(t) || produced_by_input(args, t)) {
          offload = false;
          if (why_not_offloaded.empty())
            why_not_offloaded = "an output is not the whole of a storage of its own (a view or an alias)";
        }
      });
      if (!any) offload = false;
      if (!offload) {
        save = true;  // acts as SAVE
        if (any && !offload_supported(device)) {
          if (!storage_->offload_as_save_traced && checkpoint_trace_enabled()) {
            trace::emit("sac #" + std::to_string(storage_->region) + ": " + toString(policy) + " acts as SAVE on " +
                        device.str() + " (offload needs a CUDA device): " + where(ctx.scope, op, idx) +
                        " and every later offload answer of this region are kept where they are");
          }
          storage_->offload_as_save_traced = true;
        } else if (!why_not_offloaded.empty() && checkpoint_trace_enabled()) {
          trace::emit("sac #" + std::to_string(storage_->region) + ": " + toString(policy) + " for " +
                      where(ctx.scope, op, idx) + " acts as SAVE: " + why_not_offloaded);
        }
      } else {
        storage_->offload_device = device;
      }
    }
    if (offload) {
      e.kind = CacheEntry::Kind::Saved;
      e.where = where(ctx.scope, op, idx);
      e.values = out;
      int64_t tensors = 0, bytes = 0;
      for_each_tensor(e.values, [&](Tensor& t) {
        if (!t.defined()) {
          e.offloaded.push_back(nullptr);
          return;
        }
        e.offloaded.push_back(std::make_unique<offload_detail::OffloadedTensor>(detach(t), "the output of " + e.where));
        bytes += t.nbytes();
        ++tensors;
        t = Tensor();
      });
      if (storage_->offload_order.empty()) register_offload_region(storage_);
      storage_->offload_order.emplace_back(op.entry(), idx);
      stats_detail::Update s(storage_->region);
      s->sac_tensors_offloaded += tensors;
      s->sac_bytes_offloaded += bytes;
      if (stats_detail::PlanningObserver* o = stats_detail::planning_observer())
        o->offloaded(storage_->region, ctx.scope, op, idx, bytes);
      if (checkpoint_trace_enabled())
        trace::emit("sac #" + std::to_string(storage_->region) + ": policy " + e.where + " -> " + toString(policy) +
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
  static bool produced_by_input(const std::vector<IValue>& args, const Tensor& t) {
    const StorageImpl* st = t.impl()->storage().get();
    for (const IValue& a : args)
      if (a.isTensor() && a.toTensor().defined() && a.toTensor().impl()->storage().get() == st) return true;
    return false;
  }

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
    prefetch_for_recompute(storage_);
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
    if (!e.offloaded.empty()) {
      // Offloaded: back from host memory (prefetched when a recompute started, or now).
      size_t k = 0;
      for_each_tensor(e.values, [&](Tensor& t) {
        std::unique_ptr<offload_detail::OffloadedTensor>& o = e.offloaded[k++];
        if (o) t = o->take();
      });
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
    m->storage_->release_offloaded_device_tensors();
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
