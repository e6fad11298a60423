// Tests checkpoint/plan_file*.cpp on kCUDA (under --config=cuda_emu, the emulated device): a plan
// for CUDA made by dry runs alone (as `memory_vs_recompute --dry-run --device cuda --export-plan`
// makes one on a machine without a GPU), written as a file, read back and run on the device: the
// step's max_memory_reserved is the file's predicted peak to the byte, and its decisions are the
// plan's call by call. An offloading plan round-trips with its offload decisions and host peak.
#include <catch2/catch.hpp>

#include <tuple>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/planned_steps.h"

using namespace remat;

namespace {

const remat::testing::GptShape kShape{/*batch=*/8, /*seq=*/64, /*embd=*/64, /*heads=*/4, /*vocab=*/65, /*layers=*/4};

PlannerOptions on_cuda(int64_t budget) {
  PlannerOptions o{budget};
  o.device = testing::cuda0();
  o.peak_flops = 7.9e14;  // a fixed machine for the cost model
  o.bandwidth = 4.3e12;
  return o;
}

using Decision = std::tuple<std::string, std::string, int64_t, CheckpointPolicy>;

remat::testing::StepResult run_recorded(const PolicyFn& policy, std::vector<Decision>* decisions) {
  const Device cuda = testing::cuda0();
  cuda_synchronize();
  empty_cache(cuda);
  reset_peak_memory_stats(cuda);
  PolicyFn recording = [&](const SelectiveCheckpointContext& ctx, const OperatorHandle& op,
                           const std::vector<IValue>& args) {
    const CheckpointPolicy p = policy(ctx, op, args);
    decisions->emplace_back(ctx.scope, op.name(), ctx.index, p);
    return p;
  };
  return remat::testing::gpt_train_step(kShape, cuda, nn::ActivationCheckpointing::selective(recording));
}

}  // namespace

TEST_CASE("plan file on CUDA: a plan from dry runs, read back, runs at its predicted reserved peak",
          "[plan_file][cuda_memory]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const PlannedStep step = remat::testing::planned_gpt_step(kShape);
  const CheckpointPlan probe = plan_checkpointing(step, on_cuda(int64_t{1} << 40));
  const int64_t budget = probe.recompute_all_peak_bytes + (probe.keep_all_peak_bytes - probe.recompute_all_peak_bytes) / 2;
  const CheckpointPlan plan = plan_checkpointing(step, on_cuda(budget));
  const CheckpointPlan loaded = CheckpointPlan::from_json(plan.to_json());
  CHECK(loaded.counter == MemoryCounter::Reserved);
  CHECK(loaded.device() == Device{kCUDA});
  CHECK(loaded.predicted_peak_bytes == plan.predicted_reserved_peak_bytes);
  CHECK(loaded.predicted_allocated_peak_bytes == plan.predicted_allocated_peak_bytes);
  std::vector<Decision> planned, reread;
  const remat::testing::StepResult a = run_recorded(plan.policy(), &planned);
  const remat::testing::StepResult b = run_recorded(loaded.policy(), &reread);
  REQUIRE_FALSE(planned.empty());
  CHECK(reread == planned);
  CHECK(b.reserved_peak == loaded.predicted_peak_bytes);
  CHECK(b.peak == loaded.predicted_allocated_peak_bytes);
  CHECK(b.reserved_peak == a.reserved_peak);
  CHECK(b.reserved_peak <= budget);
  CHECK(loaded.applied_to(step).predicted_peak_bytes == loaded.predicted_peak_bytes);
  empty_cache(testing::cuda0());
}

TEST_CASE("plan file on CUDA: an offloading plan keeps its offload decisions and host peak to the byte", "[plan_file][cuda_memory]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const PlannedStep step = remat::testing::planned_gpt_step(kShape);
  const CheckpointPlan probe = plan_checkpointing(step, on_cuda(int64_t{1} << 40));
  REQUIRE(probe.candidates.size() >= 2);
  // Keep the second candidate, offload the first, recompute the rest.
  const CheckpointPlan plan = probe.with_kept(step, {probe.candidates[1]}, {probe.candidates[0]});
  REQUIRE_FALSE(plan.offloaded.empty());
  const CheckpointPlan loaded = CheckpointPlan::from_json(plan.to_json());
  CHECK(loaded.offloaded == plan.offloaded);
  CHECK(loaded.predicted_host_peak_bytes == plan.predicted_host_peak_bytes);
  CHECK(loaded.host_budget_bytes == plan.host_budget_bytes);
  CHECK(loaded.kept == plan.kept);
  CHECK(loaded.predicted_host_peak_bytes > 0);
  std::vector<Decision> planned, reread;
  run_recorded(plan.policy(), &planned);
  const remat::testing::StepResult b = run_recorded(loaded.policy(), &reread);
  CHECK(reread == planned);
  CHECK(b.reserved_peak == loaded.predicted_peak_bytes);
  CHECK(max_offloaded_memory_allocated(testing::cuda0()) == loaded.predicted_host_peak_bytes);
  const CheckpointPlan applied = loaded.applied_to(step);
  CHECK(applied.predicted_peak_bytes == plan.predicted_peak_bytes);
  CHECK(applied.predicted_host_peak_bytes == plan.predicted_host_peak_bytes);
  CHECK(applied.offloaded == plan.offloaded);
  empty_cache(testing::cuda0());
}
