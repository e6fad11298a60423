// The checkpointing planner (see planner.h; no PyTorch counterpart for the whole: the pieces
// mirror torch/_functorch/partitioners.py's activation_memory_budget and torch/distributed/_tools/
// sac_estimator.py + sac_ilp.py). plan_checkpointing in phases: the profile (planner_profile.h),
// the ordering by value and the search (planner_search.h), each keep-set priced by a dry run
// (planner_dry_runs.h); the plan's methods are in checkpoint_plan.cpp.
#include "checkpoint/planner.h"

#include <string>
#include <vector>

#include "checkpoint/plan_data.h"
#include "checkpoint/planner_dry_runs.h"
#include "checkpoint/planner_search.h"
#include "engine/core/clock.h"

namespace remat {

using namespace planner_detail;

namespace {

// The first phase: the profiling run, nothing kept, every call recorded (the lowest peak any plan
// reaches).
RunResult profile(Planner& planner) {
  RunResult recompute_all = planner.run(KeepSet{}, /*profile=*/true);
  REMAT_CHECK(!planner.data.regions.empty(), "plan_checkpointing: the step ran no checkpointed region with a "
              "selective policy (use the policy it is given, e.g. nn::ActivationCheckpointing::selective(policy))");
  return recompute_all;
}

// Throws CheckpointError, naming the minimum, if `budget` is below the lowest peak any plan reaches.
void check_feasible(const Planner& planner, int64_t budget, const RunResult& recompute_all) {
  if (budget >= recompute_all.peak) return;
  const bool reserved = planner.counter() == MemoryCounter::Reserved;
  throw CheckpointError(
      "plan_checkpointing: no plan fits a budget of " + std::to_string(budget) + " bytes" +
      (reserved ? " of reserved memory" : "") + ": the minimum feasible peak is " +
      std::to_string(recompute_all.peak) + " bytes (" + mib(recompute_all.peak) +
      ", everything recomputable recomputed)" +
      (reserved ? "; its peak of allocated memory is " + std::to_string(recompute_all.allocated_peak) + " bytes (" +
                      mib(recompute_all.allocated_peak) + "), reserved counted from an empty cache"
                : std::string()));
}

// Throws CheckpointError, naming the bytes, if the host budget cannot hold even the smallest
// output the plan could offload.
void check_host_budget(const Planner& planner, const SearchSpace& space) {
  const int64_t host_budget = planner.host_budget();
  if (host_budget == 0 || space.candidates.empty()) return;
  size_t smallest = space.candidates.front();
  for (size_t c : space.candidates)
    if (planner.data.calls[c].bytes < planner.data.calls[smallest].bytes) smallest = c;
  const Data::Call& call = planner.data.calls[smallest];
  if (host_budget >= call.bytes) return;
  throw CheckpointError("plan_checkpointing: a host budget of " + std::to_string(host_budget) +
                        " bytes holds no output the plan could offload: the smallest, '" + call.key + "', takes " +
                        std::to_string(call.bytes) + " bytes (host_budget_bytes = 0 plans without offload)");
}

// Offload's options (host_budget_bytes > 0): a device that offloads, and no negative figures.
void check_offload_options(const PlannerOptions& options) {
  if (options.host_budget_bytes < 0 || options.host_link_bandwidth < 0) {
    throw CheckpointError("plan_checkpointing: host_budget_bytes and host_link_bandwidth must not be negative, got " +
                          std::to_string(options.host_budget_bytes) + " bytes and " +
                          std::to_string(options.host_link_bandwidth) + " bytes/s");
  }
  if (options.host_budget_bytes > 0 && !options.device.is_cuda()) {
    throw CheckpointError("plan_checkpointing: offload (host_budget_bytes = " +
                          std::to_string(options.host_budget_bytes) + ") needs a CUDA device, but options.device is " +
                          options.device.str() + ", whose tensors are in host memory already");
  }
}

}  // namespace

CheckpointPlan plan_checkpointing(const PlannedStep& step, const PlannerOptions& options) {
  const double t0 = now_seconds();
  if (options.budget_bytes <= 0) {
    throw CheckpointError("plan_checkpointing: the memory budget must be positive, got " +
                          std::to_string(options.budget_bytes) + " bytes");
  }
  REMAT_CHECK(static_cast<bool>(step), "plan_checkpointing: the step function is empty");
  REMAT_CHECK(!options.device.is_meta(), "plan_checkpointing: options.device is the device to plan for (cpu or cuda), "
              "not meta");
  REMAT_CHECK(options.max_dry_runs >= 3, "plan_checkpointing: max_dry_runs must be at least 3, got ",
              options.max_dry_runs);
  if (options.counter == MemoryCounter::Reserved && !options.device.is_cuda()) {
    throw CheckpointError(std::string("plan_checkpointing: a budget on reserved memory needs a CUDA device, but "
                                      "options.device is ") +
                          options.device.str() +
                          " (only the CUDA caching allocator's reserved bytes are predicted; use "
                          "MemoryCounter::Allocated)");
  }
  check_offload_options(options);
  Planner planner(step, options);
  const RunResult recompute_all = profile(planner);
  check_feasible(planner, options.budget_bytes, recompute_all);  // before any other dry run
  SearchSpace space = order_by_value(&planner.data);
  check_host_budget(planner, space);
  planner.set_phase("keep-all");
  const RunResult keep_all = planner.run(space.all);

  CheckpointPlan plan;
  plan.budget_bytes = options.budget_bytes;
  plan.recompute_all_peak_bytes = recompute_all.peak;
  plan.keep_all_peak_bytes = keep_all.peak;
  const KeepSet best =
      search_ladder(planner, &space, options.budget_bytes, recompute_all.peak, keep_all.peak);
  plan.dry_runs = planner.dry_runs() + planner.offload_dry_runs();
  finish_plan(planner, best, &plan);
  plan.planning_seconds = now_seconds() - t0;
  return plan;
}

}  // namespace remat
