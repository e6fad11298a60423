// Planned checkpointing in bench/memory_vs_recompute (see planning.h).
#include "bench/planning.h"

#include <cstdlib>
#include <limits>


namespace remat::bench {

int64_t parse_budget(const std::string& value) { return parse_byte_size("--budget", value); }

int64_t parse_offload(const std::string& value) { return parse_byte_size("--offload", value); }

int64_t parse_sweep(const std::string& value) {
  try {
    return parse_int("--sweep", value, 1);  // engine/core/cli.h: the whole text, never wrapped
  } catch (const UsageError&) {
    throw UsageError("--sweep expects an integer >= 1 (how many budgets to plan), got '" + value + "'");
  }
}

EstimateMode parse_estimate(const std::string& value) {
  if (value == "benchmark") return EstimateMode::kBenchmark;
  if (value == "cost-model") return EstimateMode::kCostModel;
  throw Error("--estimate must be benchmark (time each op call on the machine) or cost-model (the roofline), got '" +
              value + "'");
}

void check_planning_args(const PlanningArgs& args, bool dry_run) {
  REMAT_CHECK(!(dry_run && args.sweep > 0 && args.offload_bytes == 0), "--sweep ", args.sweep, " runs every plan for "
              "real; it cannot go with --dry-run (--budget SIZE --dry-run predicts one plan; --offload SIZE --sweep N "
              "--dry-run compares the modeled frontiers)");
  REMAT_CHECK(!(dry_run && args.sweep_at_strategies), "--sweep-at-strategies plans at the strategies' measured peaks; "
              "it cannot go with --dry-run");
}

void check_offload_args(const PlanningArgs& args, const std::string& device, const std::string& meta_accounting,
                        bool dry_run) {
  if (args.offload_bytes == 0) return;
  const std::string size = byte_size_text(args.offload_bytes);
  REMAT_CHECK(args.sweep > 0, "--offload ", size, " compares the two frontiers at the budgets of a sweep: it needs "
              "--sweep N");
  REMAT_CHECK(dry_run || device == "cuda", "--offload ", size, " moves a CUDA device's tensors to pinned host memory: "
              "it needs --device cuda, got --device ", device);
  REMAT_CHECK(meta_accounting == "cuda", "--offload ", size, " plans for a CUDA device: its dry runs must count like "
              "cuda (--device cuda or --meta-accounting cuda), got --meta-accounting ", meta_accounting, " with --device ",
              device);
}

PlannedStep benchmark_step(const ModelShape& shape, const TrainingOptions& options, int64_t steps) {
  TrainingOptions o = options;
  o.keep_timeline = false;
  o.on_step = nullptr;
  return [shape, o, steps](const PolicyFn& policy, Device device) {
    Strategy s{"planning", "plan_checkpointing's dry run", nn::ActivationCheckpointing::selective(policy), false};
    run_training_steps(s, shape, device, steps, o);
  };
}

CheckpointPlan plan_budget(const ModelShape& shape, const TrainingOptions& options, int64_t budget_bytes,
                           Device device, const std::string& flag, const PlanningArgs& machine,
                           int64_t host_budget_bytes) {
  REMAT_CHECK(!device.is_meta(), "plan_budget: the device to plan for is cpu or cuda, not meta");
  PlannerOptions po;
  po.budget_bytes = budget_bytes;
  po.device = device;
  po.peak_flops = machine.peak_flops;
  po.bandwidth = machine.bandwidth;
  po.estimate_mode = machine.estimate_mode;
  po.estimator = machine.estimator;
  po.host_budget_bytes = host_budget_bytes;
  po.host_link_bandwidth = machine.host_link_bandwidth;
  try {
    return plan_checkpointing(benchmark_step(shape, options), po);
  } catch (const CheckpointError& e) {
    throw CheckpointError(flag + " " + byte_size_text(budget_bytes) + ": " + e.what());
  }
}

CheckpointPlan plan_bounds(const ModelShape& shape, const TrainingOptions& options, Device device,
                           const PlanningArgs& machine) {
  return plan_budget(shape, options, std::numeric_limits<int64_t>::max(), device, "plan_bounds", machine);
}

std::vector<int64_t> sweep_budgets(int64_t lo, int64_t hi, int64_t n) {
  REMAT_CHECK(n >= 1, "sweep_budgets: the number of budgets must be at least 1, got ", n);
  REMAT_CHECK(lo <= hi, "sweep_budgets: the range [", lo, ", ", hi, "] is empty");
  if (n == 1) return {lo + (hi - lo) / 2};
  std::vector<int64_t> budgets;
  const long double span = static_cast<long double>(hi - lo);
  for (int64_t i = 0; i < n; ++i)
    budgets.push_back(i == n - 1 ? hi : lo + static_cast<int64_t>(span * i / (n - 1)));
  return budgets;
}

std::string planned_name(int64_t budget_bytes, bool offload) {
  std::string text = byte_size_text(budget_bytes);
  text.erase(text.find(' '), 1);  // "60.0MiB"
  return (offload ? "plan+offload@" : "plan@") + text;
}

Strategy planned_strategy(const CheckpointPlan& plan, const std::string& name) {
  return {name, "SAC planned by plan_checkpointing for " + byte_size_text(plan.budget_bytes),
          nn::ActivationCheckpointing::planned(plan), false};
}

void record_plan(const CheckpointPlan& plan, StrategyResult* r) {
  r->budget_bytes = plan.budget_bytes;
  r->plan_predicted_peak_bytes = plan.predicted_peak_bytes;
  r->plan_counter = toString(plan.counter);
  r->plan_recompute_flops = plan.recompute_flops;
  r->plan_overhead_seconds = plan.predicted_overhead_seconds;
  r->plan_recompute_seconds = plan.predicted_recompute_seconds;
  r->planning_seconds = plan.planning_seconds;
  r->planning_dry_runs = plan.dry_runs;
  r->plan_host_budget_bytes = plan.host_budget_bytes;
  r->plan_host_peak_bytes = plan.predicted_host_peak_bytes;
  r->plan_offloaded_bytes = plan.offloaded_bytes;
  r->plan_offloaded_calls = static_cast<int64_t>(plan.offloaded.size());
  r->plan_transfer_seconds = plan.predicted_transfer_seconds;
  r->plan_host_link_bandwidth = plan.host_link_bandwidth;
}

}  // namespace remat::bench
