// Planned checkpointing in bench/memory_vs_recompute: --budget SIZE adds a `planned` row (what
// plan_checkpointing chose for that budget, measured beside the fixed strategies), --sweep N
// plans N budgets across the feasible range and runs each (the planned frontier), and
// --sweep-at-strategies plans at each fixed strategy's own measured peak. No PyTorch counterpart
// (torch/_functorch/partitioners.py's activation_memory_budget plans compiled graphs only).
//
//   CheckpointPlan bounds = plan_bounds(shape, options, Device{kCPU});
//   for (int64_t budget : sweep_budgets(bounds.recompute_all_peak_bytes, bounds.keep_all_peak_bytes, 6)) {
//     CheckpointPlan plan = plan_budget(shape, options, budget, Device{kCPU});
//     StrategyResult r;
//     record_measured(run_training_steps(planned_strategy(plan, planned_name(budget)), shape, Device{kCPU}, 3), 1, &r);
//     record_plan(plan, &r);   // r.measured.peak_bytes == plan.predicted_peak_bytes <= budget
//   }
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/strategies.h"
#include "bench/strategy_result.h"
#include "bench/training_step.h"
#include "remat.h"

namespace remat::bench {

// The planning flags of memory_vs_recompute.
struct PlanningArgs {
  int64_t budget_bytes = 0;          // --budget SIZE: plan for it and add a `planned` row; 0: no row
  int64_t sweep = 0;                 // --sweep N: N budgets across [recompute-all, keep-all]; 0: no sweep
  bool sweep_at_strategies = false;  // --sweep-at-strategies: plan at each fixed strategy's measured peak too
  // The cost model's machine (PlannerOptions::peak_flops, bandwidth); 0: the planner's defaults.
  // memory_vs_recompute measures both on the CPU in the same run.
  double peak_flops = 0, bandwidth = 0;
  // --estimate benchmark|cost-model: how the planner prices a recomputed call (PlannerOptions::
  // estimate_mode); memory_vs_recompute's default is benchmark when it plans for the CPU it runs on.
  EstimateMode estimate_mode = EstimateMode::kCostModel;
  // Shared by every plan of the run, so that a benchmark times each distinct call once and all
  // plans are priced alike; null: each plan makes its own from the fields above.
  std::shared_ptr<RuntimeEstimator> estimator;
  // --offload SIZE: each sweep budget planned a second time with this much pinned host memory
  // (PlannerOptions::host_budget_bytes), the keep/recompute/offload frontier beside the
  // keep/recompute one; 0: no offload.
  int64_t offload_bytes = 0;
  // The link's bytes/s the offloads are priced at (PlannerOptions::host_link_bandwidth); 0: the
  // planner's default (measured on a GPU, the datasheet's on the emulated device). memory_vs_recompute
  // sets the datasheet's where no CUDA device is there to measure (a dry run in a CPU build).
  double host_link_bandwidth = 0;
  bool sweeps() const { return sweep > 0 || sweep_at_strategies; }
  // --export-plan FILE: the plan of --budget written there (docs/plan_format.md); with --sweep N a
  // folder, one file per sweep budget (bench/plan_files.h); "": none.
  std::string export_plan;
  // --plan FILE: a saved plan, checked against this run's step and trained under (a `plan-file` row);
  // with --sweep N the folder an --export-plan wrote, each sweep budget run under its file.
  std::string plan_file;
};

// --budget's value: a size such as 60MiB (parse_byte_size). --sweep's: an integer >= 1. Both
// throw remat::Error naming the flag and the value.
int64_t parse_budget(const std::string& value);
int64_t parse_sweep(const std::string& value);
// --offload's value: a size like --budget's (parse_byte_size), naming --offload in its errors.
int64_t parse_offload(const std::string& value);
// --estimate's value: "benchmark" or "cost-model" (throws remat::Error naming the value).
EstimateMode parse_estimate(const std::string& value);
// Combinations that make no sense: a sweep runs every plan for real, so not with --dry-run
// (unless it is an --offload sweep: the two frontiers' modeled costs are the point).
void check_planning_args(const PlanningArgs& args, bool dry_run);
// --offload's needs: --sweep N (the budgets to compare at), and a CUDA device to plan for (the
// CPU's tensors already live in host memory): dry runs that count like cuda (--meta-accounting,
// which defaults to --device) and, unless `dry_run`, --device cuda. Throws remat::Error naming
// the device.
void check_offload_args(const PlanningArgs& args, const std::string& device, const std::string& meta_accounting,
                        bool dry_run);

// The benchmark's training step as the planner calls it: `steps` steps of run_training_steps on
// `shape` under SAC with the planner's policy (selective regions in every block). From the second
// step on AdamW's moments are alive, so the last step's peak, which the planner bounds, is the
// peak of every step the benchmark measures after warm-up.
PlannedStep benchmark_step(const ModelShape& shape, const TrainingOptions& options, int64_t steps = 2);

// plan_checkpointing on the benchmark's step for `budget_bytes`, with `device`'s cost model (or
// the machine's figures in `machine`) and allocator accounting (cpu or cuda). A budget below the minimum throws the planner's
// CheckpointError (it names the minimum feasible peak in bytes), prefixed with `flag` and the
// budget. `host_budget_bytes` > 0: the plan may also offload (PlannerOptions::host_budget_bytes).
CheckpointPlan plan_budget(const ModelShape& shape, const TrainingOptions& options, int64_t budget_bytes,
                           Device device, const std::string& flag = "--budget", const PlanningArgs& machine = {},
                           int64_t host_budget_bytes = 0);
// The feasible range in three dry runs: a plan with no limit (it keeps everything backward
// needs), whose recompute_all_peak_bytes and keep_all_peak_bytes bound every plan's peak.
CheckpointPlan plan_bounds(const ModelShape& shape, const TrainingOptions& options, Device device,
                           const PlanningArgs& machine = {});

// `n` budgets evenly spaced over [lo, hi], both ends included, rising (one budget: the middle).
// Throws remat::Error for n < 1 or hi < lo.
std::vector<int64_t> sweep_budgets(int64_t lo, int64_t hi, int64_t n);

// "plan@60.0MiB": a sweep point's name in tables and pictures; "plan+offload@60.0MiB" for a plan
// that may offload.
std::string planned_name(int64_t budget_bytes, bool offload = false);
// The plan as a benchmark strategy (nn::ActivationCheckpointing::planned).
Strategy planned_strategy(const CheckpointPlan& plan, const std::string& name);
// The plan's budget and figures onto the result of running it.
void record_plan(const CheckpointPlan& plan, StrategyResult* r);

}  // namespace remat::bench
