// The planner's dry runs (see planner_dry_runs.h; no PyTorch counterpart).
#include "checkpoint/planner_dry_runs.h"

#include <algorithm>
#include <exception>
#include <unordered_set>

#include "checkpoint/cost_model_defaults.h"
#include "checkpoint/offload_cost.h"
#include "checkpoint/planner_profile.h"
#include "checkpoint/stats_detail.h"
#include "checkpoint/thread_state.h"
#include "engine/core/allocator.h"
#include "engine/core/dry_run.h"

namespace remat::planner_detail {

namespace {

// Re-raises the exception being handled with `where` before its message: remat's errors as their
// own type, any other std::exception as a remat::Error with the original nested in it
// (std::rethrow_if_nested), anything else as it is.
[[noreturn]] void rethrow_with_context(const std::string& where) {
  try {
    throw;
  } catch (const CheckpointError& e) {
    throw CheckpointError(where + e.what());
  } catch (const Error& e) {
    throw Error(where + e.what());
  } catch (const std::exception& e) {
    std::throw_with_nested(Error(where + e.what()));
  }
}

}  // namespace

Planner::Planner(const PlannedStep& step, const PlannerOptions& o)
    : step_(step),
      estimator_(o.estimator ? o.estimator
                             : std::make_shared<RuntimeEstimator>(o.estimate_mode, o.device, o.peak_flops, o.bandwidth)),
      imitated_(o.device.is_cuda() ? kCUDA : kCPU),
      counter_(o.counter.value_or(o.device.is_cuda() ? MemoryCounter::Reserved : MemoryCounter::Allocated)) {
  REMAT_CHECK(estimator_->device() == o.device, "plan_checkpointing: options.estimator prices calls on ",
              toString(estimator_->device().type), ", but options.device is ", toString(o.device.type));
  data.options = o;
  data.options.estimator = estimator_;  // with_kept prices with the same measurements
  if (o.host_budget_bytes > 0)
    host_link_bandwidth_ = o.host_link_bandwidth > 0 ? o.host_link_bandwidth : default_host_link_bandwidth(o.device);
}

EstimateMode Planner::estimate_mode() const { return estimator_->mode(); }

RunResult Planner::run(const KeepSet& set, bool profile, bool record_regions) {
  const bool memoized = !profile && !record_regions;
  const std::vector<bool>& keep = set.keep;
  const bool offloads = std::find(set.offload.begin(), set.offload.end(), true) != set.offload.end();
  if (memoized) {
    auto it = memo_.find(offloads ? set : KeepSet{keep, {}});
    if (it != memo_.end()) return evaluated[it->second].second;
  }
  const int64_t number = dry_runs_ + offload_dry_runs_ + 1;
  ++(offloads ? offload_dry_runs_ : dry_runs_);
  auto kept_keys = std::make_shared<std::unordered_set<std::string>>();
  auto offloaded_keys = std::make_shared<std::unordered_set<std::string>>();
  for (size_t i = 0; i < keep.size(); ++i)
    if (keep[i]) kept_keys->insert(data.calls[i].key);
  if (offloads)
    for (size_t i = 0; i < set.offload.size(); ++i)
      if (set.offload[i]) offloaded_keys->insert(data.calls[i].key);
  PolicyFn policy = [kept_keys, offloaded_keys](const SelectiveCheckpointContext& ctx, const OperatorHandle& op,
                                                const std::vector<IValue>&) {
    const std::string key = call_key(ctx.scope, op.name(), ctx.index);
    if (offloaded_keys->count(key)) return CheckpointPolicy::MUST_CPU_OFFLOAD;
    return kept_keys->count(key) ? CheckpointPolicy::MUST_SAVE : CheckpointPolicy::PREFER_RECOMPUTE;
  };
  DryRunObserver observer(&data, profile, estimator_.get(), record_regions);
  const ThreadStateSnapshot before;
  stats_detail::PlanningObserver* previous = stats_detail::planning_observer();
  const std::string where = who + ": dry run " + std::to_string(number) + " (" + phase + ")";
  RunResult r;
  {
    DryRun dry(imitated_);
    stats_detail::set_planning_observer(&observer);
    try {
      step_(policy, Device{kMeta});
    } catch (...) {
      stats_detail::set_planning_observer(previous);
      before.restore();
      const std::string differs = observer.mismatch();
      if (!differs.empty()) {
        std::string what = "an exception that is not a std::exception";
        try {
          throw;
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        throw CheckpointError(not_the_same_step(where, differs) + "; the step then threw: " + what);
      }
      rethrow_with_context(where + ": the step threw: ");
    }
    stats_detail::set_planning_observer(previous);
    // Counted from the step's start (the DryRun's), reserved from an empty cache.
    r.allocated_peak = max_memory_allocated(Device{kMeta});
    r.reserved_peak = imitated_ == kCUDA ? max_memory_reserved(Device{kMeta}) : 0;
    r.peak = counter_ == MemoryCounter::Reserved ? r.reserved_peak : r.allocated_peak;
    r.flops = checkpoint_stats().total.flops_recomputed;
    r.overhead = observer.overhead();
    r.host_peak = imitated_ == kCUDA ? max_offloaded_memory_allocated(Device{kMeta}) : 0;
    r.offloaded_bytes = checkpoint_stats().total.sac_bytes_offloaded;
    r.released = observer.released_calls();
  }
  if (offloads) {  // priced like the overhead: the regions since checkpoint_stats() was last reset
    r.transfer = transfer_cost(data, keep, set.offload, host_link_bandwidth_, observer.first_region()).exposed_seconds;
  }
  const std::string differs = observer.mismatch();
  if (!differs.empty()) throw CheckpointError(not_the_same_step(where, differs));
  if (profile) {  // nothing kept: the keep-set of no candidate
    const KeepSet none{std::vector<bool>(data.calls.size(), false), {}};
    memo_.emplace(none, evaluated.size());
    evaluated.emplace_back(none, r);
  } else if (memoized) {
    const KeepSet key = offloads ? set : KeepSet{keep, {}};
    memo_.emplace(key, evaluated.size());
    evaluated.emplace_back(key, r);
  }
  return r;
}

size_t Planner::cheapest_fitting(int64_t budget, bool with_offload, size_t priced) const {
  size_t best = evaluated.size();
  for (size_t i = 0; i < std::min(priced, evaluated.size()); ++i) {
    const RunResult& r = evaluated[i].second;
    if (!fits(r, budget, host_budget()) || (!with_offload && !evaluated[i].first.offload.empty())) continue;
    if (best == evaluated.size() || cheaper(r, evaluated[best].second)) best = i;
  }
  return best;
}

std::string Planner::not_the_same_step(const std::string& where, const std::string& differs) const {
  return where + ": the step is not the same step as in " + profile_name + ": " + differs + ". " + who +
         " calls the step many times, and each call must run the same model on the same shapes (build it from "
         "the same configuration every time)";
}

// The last dry run: the plan's figures, verified, and each region priced.
void finish_plan(Planner& planner, const KeepSet& best, CheckpointPlan* plan) {
  Data& data = planner.data;
  for (Data::Region& r : data.regions) r.overhead = r.flops = 0, r.recomputed = 0;
  planner.phase = "the plan's final check";
  RunResult final_run = planner.run(best, false, /*record_regions=*/true);
  plan->kept.clear();
  plan->offloaded.clear();
  for (size_t i = 0; i < data.calls.size(); ++i) {
    data.calls[i].offloaded = !best.offload.empty() && best.offload[i];
    data.calls[i].kept = best.keep[i] && !data.calls[i].offloaded;
    if (data.calls[i].kept) plan->kept.push_back(data.calls[i].key);
    if (data.calls[i].offloaded) plan->offloaded.push_back(data.calls[i].key);
  }
  plan->candidates.clear();
  plan->replay_candidates.clear();
  for (size_t c : data.candidates) plan->candidates.push_back(data.calls[c].key);
  for (size_t c : data.replay_candidates) plan->replay_candidates.push_back(data.calls[c].key);
  plan->counter = planner.counter();
  plan->predicted_peak_bytes = final_run.peak;
  plan->predicted_allocated_peak_bytes = final_run.allocated_peak;
  plan->predicted_reserved_peak_bytes = final_run.reserved_peak;
  plan->recompute_flops = final_run.flops;
  plan->predicted_overhead_seconds = final_run.cost();
  plan->predicted_recompute_seconds = final_run.overhead;
  plan->host_budget_bytes = data.options.host_budget_bytes;
  plan->predicted_host_peak_bytes = final_run.host_peak;
  plan->offloaded_bytes = final_run.offloaded_bytes;
  plan->predicted_transfer_seconds = final_run.transfer;
  plan->host_link_bandwidth = planner.host_link_bandwidth();
  plan->estimate_mode = planner.estimate_mode();
  plan->data = std::make_shared<const Data>(std::move(data));
}

}  // namespace remat::planner_detail
