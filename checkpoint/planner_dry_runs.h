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

// What one dry run measured.
struct RunResult {
  int64_t peak = 0;  // of the plan's counter
  int64_t allocated_peak = 0, reserved_peak = 0;
  double flops = 0, overhead = 0;
};

// What the search (checkpoint/planner_search.h) prices keep-sets with: a keep-set in, what its dry
// run measured out (a keep-set priced before is not run again).
class KeepSetPricer {
 public:
  virtual ~KeepSetPricer() = default;
  virtual RunResult price(const std::vector<bool>& keep) = 0;
  virtual int64_t dry_runs() const = 0;                 // made so far
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
  RunResult run(const std::vector<bool>& keep, bool profile = false, bool record_regions = false);
  RunResult price(const std::vector<bool>& keep) override { return run(keep); }
  int64_t dry_runs() const override { return dry_runs_; }
  void set_phase(const std::string& phase) override { this->phase = phase; }

  // The cheapest keep-set priced so far whose peak fits `budget` (ties: the lower peak, then the
  // first priced); evaluated.size() if none fits.
  size_t cheapest_fitting(int64_t budget) const;

  Data data;
  std::string who = "plan_checkpointing";  // for error messages: the caller,
  std::string phase = "profile";           // what it is doing,
  std::string profile_name = "the profiling run (dry run 1)";  // and the run every later one must repeat
  std::vector<std::pair<std::vector<bool>, RunResult>> evaluated;  // every keep-set priced, in order

 private:
  std::string not_the_same_step(const std::string& where, const std::string& differs) const;

  const PlannedStep& step_;
  std::shared_ptr<RuntimeEstimator> estimator_;
  DeviceType imitated_;
  MemoryCounter counter_;
  int64_t dry_runs_ = 0;
  std::map<std::vector<bool>, size_t> memo_;  // keep-set -> index into evaluated
};

// The last dry run: the plan's figures, verified, and each region priced; `plan` takes the data.
void finish_plan(Planner& planner, const std::vector<bool>& best, CheckpointPlan* plan);

}  // namespace remat::planner_detail
