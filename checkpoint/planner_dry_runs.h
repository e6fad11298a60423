// The planner's dry runs (no PyTorch counterpart; sac_estimator.py runs a model once under a
// FakeTensorMode, the planner many times): a keep-set priced by running the user's step on the
// Meta device in a DryRun of its own (engine/core/dry_run.h), each keep-set run once, and the
// plan's final check. Internal (checkpoint/planner.cpp, checkpoint/checkpoint_plan.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/plan_data.h"
#include "checkpoint/planner.h"

namespace remat::planner_detail {

// What one dry run measured, and the transfer model's price of its offloads.
struct RunResult {
  int64_t peak = 0;  // of the plan's counter
  int64_t allocated_peak = 0, reserved_peak = 0;
  int64_t host_peak = 0;       // of offloaded host bytes (max_offloaded_memory_allocated)
  int64_t offloaded_bytes = 0;  // copied to host in the step (checkpoint_stats().total.sac_bytes_offloaded)
  double flops = 0, overhead = 0;
  double transfer = 0;  // the offloads' exposed transfer seconds (checkpoint/offload_cost.h)
  // The kept calls a region released when its forward ended (indices into Data::calls): a rerun
  // never reaches them (DryRunObserver::released_calls).
  std::vector<size_t> released;
  double cost() const { return overhead + transfer; }  // what the search minimises
};

// Whether `r` fits a device budget and a host budget, and whether it is cheaper than `than`
// (ties: the lower peak).
inline bool fits(const RunResult& r, int64_t budget, int64_t host_budget) {
  return r.peak <= budget && r.host_peak <= host_budget;
}
inline bool cheaper(const RunResult& r, const RunResult& than) {
  return r.cost() < than.cost() || (r.cost() == than.cost() && r.peak < than.peak);
}

// A choice per call of the profile: kept on the device (keep), offloaded to host memory
// (offload; empty: none), or else recomputed.
struct KeepSet {
  std::vector<bool> keep, offload;
  bool operator<(const KeepSet& o) const { return keep != o.keep ? keep < o.keep : offload < o.offload; }
};

// What the search (checkpoint/planner_search.h) prices keep-sets with: a keep-set in, what its dry
// run measured out (a keep-set priced before is not run again).
class KeepSetPricer {
 public:
  virtual ~KeepSetPricer() = default;
  virtual RunResult price(const std::vector<bool>& keep) = 0;
  // `keep` kept and `offload` offloaded (the planner's offload phase, planner_offload.h).
  virtual RunResult price(const KeepSet& set) = 0;
  virtual int64_t dry_runs() const = 0;                 // made so far
  // Of those, the ones of keep-sets that offload (the offload phases' own count; default: all).
  virtual int64_t offload_dry_runs() const { return dry_runs(); }
  virtual void set_phase(const std::string& phase) = 0;  // what the search does (for error messages)
};

class Planner : public KeepSetPricer {
 public:
  Planner(const PlannedStep& step, const PlannerOptions& o);
  EstimateMode estimate_mode() const;
  MemoryCounter counter() const { return counter_; }

  // One dry run with `keep` kept (profile: also records the calls), in a DryRun of its own: its
  // Meta counters, checkpoint_stats() and storage observers are its own, whatever other threads
  // run. A keep-set priced before is not run again. The step must make the profiling run's calls
  // (else CheckpointError); if it throws, the thread's state is restored and its error re-raised
  // with the dry run's number and phase.
  RunResult run(const KeepSet& set, bool profile = false, bool record_regions = false);
  RunResult run(const std::vector<bool>& keep, bool profile = false, bool record_regions = false) {
    return run(KeepSet{keep, {}}, profile, record_regions);
  }
  RunResult price(const std::vector<bool>& keep) override { return run(keep); }
  RunResult price(const KeepSet& set) override { return run(set); }
  // The keep/recompute search's count (the profile, keep-all, keep-sets that offload nothing, the
  // final check), and the offload phases' (keep-sets that offload): each bounded by max_dry_runs,
  // so that the keep/recompute search runs as it would without a host budget.
  int64_t dry_runs() const override { return dry_runs_; }
  int64_t offload_dry_runs() const override { return offload_dry_runs_; }
  void set_phase(const std::string& phase) override { this->phase = phase; }

  // The cheapest keep-set priced so far whose peak fits `budget` and whose host peak the host
  // budget (ties: the lower peak, then the first priced); only those that offload nothing unless
  // with_offload; only the first `priced` (all by default). evaluated.size() if none fits.
  size_t cheapest_fitting(int64_t budget, bool with_offload = false, size_t priced = SIZE_MAX) const;
  int64_t host_budget() const { return data.options.host_budget_bytes; }
  double host_link_bandwidth() const { return host_link_bandwidth_; }

  Data data;
  std::string who = "plan_checkpointing";  // for error messages: the caller,
  std::string phase = "profile";           // what it is doing,
  std::string profile_name = "the profiling run (dry run 1)";  // and the run every later one must repeat
  std::vector<std::pair<KeepSet, RunResult>> evaluated;  // every keep-set priced, in order

 private:
  std::string not_the_same_step(const std::string& where, const std::string& differs) const;

  const PlannedStep& step_;
  std::shared_ptr<RuntimeEstimator> estimator_;
  DeviceType imitated_;
  MemoryCounter counter_;
  int64_t dry_runs_ = 0, offload_dry_runs_ = 0;
  double host_link_bandwidth_ = 0;
  std::map<KeepSet, size_t> memo_;  // keep-set -> index into evaluated
};

// The last dry run: the plan's figures, verified, and each region priced; `plan` takes the data.
void finish_plan(Planner& planner, const KeepSet& best, CheckpointPlan* plan);

}  // namespace remat::planner_detail
