// Recompute accounting (see stats.h).
#include "checkpoint/stats.h"
#include "checkpoint/stats_detail.h"

#include <mutex>

#include "engine/core/dry_run.h"

namespace remat {

void CheckpointRegionStats::add(const CheckpointRegionStats& o) {
  recomputations += o.recomputations;
  tensors_packed += o.tensors_packed;
  ops_recomputed += o.ops_recomputed;
  ops_replayed += o.ops_replayed;
  flops_recomputed += o.flops_recomputed;
  bytes_recomputed += o.bytes_recomputed;
  sac_tensors_saved += o.sac_tensors_saved;
  sac_bytes_saved += o.sac_bytes_saved;
  sac_tensors_offloaded += o.sac_tensors_offloaded;
  sac_bytes_offloaded += o.sac_bytes_offloaded;
  sac_bytes_held += o.sac_bytes_held;
  sac_bytes_held_peak += o.sac_bytes_held_peak;
  holder_bytes_held += o.holder_bytes_held;
  holder_bytes_held_peak += o.holder_bytes_held_peak;
  for (const auto& [k, v] : o.recomputed_by_op) recomputed_by_op[k] += v;
  for (const auto& [k, v] : o.replayed_by_op) replayed_by_op[k] += v;
}

namespace {
// Every region's figures, process-wide, each tagged with the dry run it ran in
// (engine/core/dry_run.h: 0 outside every DryRun): checkpoint_stats() and reset_checkpoint_stats()
// see the calling thread's current dry run's regions only. Region ids are unique in the process,
// so a gauge that changes later, in any thread (a SAC cache freed after its dry run), finds its
// own region. A closed dry run's regions are forgotten once their gauges are back to zero.
struct Entry {
  CheckpointRegionStats stats;
  uint64_t owner = 0;
  bool closed = false;  // its DryRun has closed: erased as soon as nothing is held
};
struct Registry {
  std::mutex mutex;
  std::map<int64_t, Entry> regions;
};
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}
bool holds_nothing(const CheckpointRegionStats& s) { return s.sac_bytes_held == 0 && s.holder_bytes_held == 0; }

void forget_dry_run(uint64_t id) {
  Registry& r = registry();
  std::lock_guard<std::mutex> g(r.mutex);
  for (auto it = r.regions.begin(); it != r.regions.end();) {
    if (it->second.owner == id) {
      if (holds_nothing(it->second.stats)) {
        it = r.regions.erase(it);
        continue;
      }
      it->second.closed = true;
    }
    ++it;
  }
}
const bool kForgetsClosedDryRuns = (add_dry_run_closed_hook(&forget_dry_run), true);
}  // namespace

CheckpointStats checkpoint_stats() {
  Registry& r = registry();
  const uint64_t owner = current_dry_run().id;
  std::lock_guard<std::mutex> g(r.mutex);
  CheckpointStats out;
  for (const auto& [id, e] : r.regions) {
    if (e.owner != owner) continue;
    out.regions.push_back(e.stats);
    out.total.add(e.stats);
  }
  return out;
}

void reset_checkpoint_stats() {
  if (stats_detail::PlanningObserver* o = stats_detail::planning_observer()) o->stats_reset();
  Registry& r = registry();
  const uint64_t owner = current_dry_run().id;
  std::lock_guard<std::mutex> g(r.mutex);
  // Gauges of regions still alive keep their current values; counters restart.
  for (auto it = r.regions.begin(); it != r.regions.end();) {
    if (it->second.owner != owner) {
      ++it;
      continue;
    }
    CheckpointRegionStats& s = it->second.stats;
    if (holds_nothing(s)) {
      it = r.regions.erase(it);
      continue;
    }
    CheckpointRegionStats fresh;
    fresh.region = s.region;
    fresh.sac_bytes_held = fresh.sac_bytes_held_peak = s.sac_bytes_held;
    fresh.holder_bytes_held = fresh.holder_bytes_held_peak = s.holder_bytes_held;
    s = fresh;
    ++it;
  }
}

namespace stats_detail {

Update::Update(int64_t region) : region_(region) {
  Registry& r = registry();
  r.mutex.lock();
  auto [it, fresh] = r.regions.try_emplace(region);
  if (fresh) it->second.owner = current_dry_run().id;  // a region's first figure comes from its forward
  s = &it->second.stats;
  s->region = region;
}
Update::~Update() {
  if (s->sac_bytes_held > s->sac_bytes_held_peak) s->sac_bytes_held_peak = s->sac_bytes_held;
  if (s->holder_bytes_held > s->holder_bytes_held_peak) s->holder_bytes_held_peak = s->holder_bytes_held;
  Registry& r = registry();
  auto it = r.regions.find(region_);
  if (it->second.closed && holds_nothing(*s)) r.regions.erase(it);
  r.mutex.unlock();
}

int64_t bytes_of(const std::vector<IValue>& values) {
  int64_t n = 0;
  for (const IValue& v : values) {
    if (v.isTensor()) n += v.toTensor().nbytes();
    else if (v.isTensorList())
      for (const Tensor& t : v.toTensorListRef()) n += t.defined() ? t.nbytes() : 0;
  }
  return n;
}

double op_flops(const OperatorHandle& op, const std::vector<IValue>& args, const std::vector<IValue>& outputs) {
  const std::string& name = op.name();
  auto t = [&](size_t i) -> const Tensor& { return args.at(i).toTensor(); };
  if (name == "aten::mm" && args.size() >= 2) {
    return 2.0 * t(0).size(0) * t(0).size(1) * t(1).size(1);
  }
  if (name == "aten::addmm" && args.size() >= 3) {
    return 2.0 * t(1).size(0) * t(1).size(1) * t(2).size(1);
  }
  if (name == "aten::bmm" && args.size() >= 2) {  // [batch..., m, k] @ [batch..., k, n]
    return 2.0 * static_cast<double>(t(0).numel()) * static_cast<double>(t(1).size(-1));
  }
  // the fused attention (CPU's or CUDA's): q k^T and P v, counted in full as the math path's two bmm are (the causal
  // kernel skips about half of both)
  if ((name == "aten::_scaled_dot_product_flash_attention_for_cpu" ||
       name == "aten::_scaled_dot_product_efficient_attention") &&
      args.size() >= 3) {
    return 4.0 * static_cast<double>(t(0).numel()) * static_cast<double>(t(1).size(-2));
  }
  double n = 0;
  for (const IValue& v : outputs) {
    if (v.isTensor()) n += static_cast<double>(v.toTensor().numel());
    else if (v.isTensorList())
      for (const Tensor& x : v.toTensorListRef()) n += x.defined() ? static_cast<double>(x.numel()) : 0;
  }
  return n;
}

namespace {
thread_local PlanningObserver* tls_planning_observer = nullptr;
}
PlanningObserver* planning_observer() { return tls_planning_observer; }
void set_planning_observer(PlanningObserver* observer) { tls_planning_observer = observer; }

namespace {
class RecomputeAccountingMode : public DispatchMode {
 public:
  explicit RecomputeAccountingMode(int64_t region) : region_(region) {}
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    std::vector<IValue> out = op.call(args);
    if (op.name() == "aten::detach") return out;  // bookkeeping, not recomputation
    double flops = op_flops(op, args, out);
    int64_t bytes = bytes_of(out);
    Update s(region_);
    s->ops_recomputed += 1;
    s->flops_recomputed += flops;
    s->bytes_recomputed += bytes;
    s->recomputed_by_op[op.name()] += 1;
    if (PlanningObserver* o = tls_planning_observer) o->recomputed(region_, op, args, out);
    return out;
  }

 private:
  int64_t region_;
};
}  // namespace

std::shared_ptr<DispatchMode> make_recompute_accounting_mode(int64_t region) {
  return std::make_shared<RecomputeAccountingMode>(region);
}

}  // namespace stats_detail
}  // namespace remat
