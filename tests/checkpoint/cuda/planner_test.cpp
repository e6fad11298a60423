// Tests checkpoint/planner.cpp on kCUDA (under --config=cuda_emu, the emulated device): a budget on
// reserved memory (the default for CUDA) is met by the real step, whose max_memory_reserved is
// the plan's prediction to the byte, across a sweep of seven budgets.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/planned_steps.h"

using namespace remat;

namespace {

using remat::testing::gpt_train_step;
using remat::testing::planned_gpt_step;

// A 4-layer GPT trained with AdamW (tests/testing/planned_steps.h), large enough that its
// activations take several of the caching allocator's segments, so that budgets on reserved
// bytes lead to different plans.
const remat::testing::GptShape kShape{/*batch=*/8, /*seq=*/64, /*embd=*/64, /*heads=*/4, /*vocab=*/65, /*layers=*/4};

PlannerOptions on_cuda(int64_t budget) {
  PlannerOptions o{budget};
  o.device = testing::cuda0();
  o.peak_flops = 7.9e14;  // a fixed machine for the cost model: the plans do not depend on a measurement
  o.bandwidth = 4.3e12;
  return o;
}

}  // namespace

TEST_CASE("planner on CUDA: a budget on reserved memory, met to the byte across seven budgets",
          "[planner][cuda_memory]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device cuda = testing::cuda0();
  const PlannedStep step = planned_gpt_step(kShape);
  const CheckpointPlan probe = plan_checkpointing(step, on_cuda(int64_t{1} << 40));
  CHECK(probe.counter == MemoryCounter::Reserved);  // the default on CUDA
  const int64_t lo = probe.recompute_all_peak_bytes, hi = probe.keep_all_peak_bytes;
  INFO("feasible reserved peaks [" << lo << ", " << hi << "]");
  WARN("feasible reserved peaks [" << lo << ", " << hi << "]; allocated peak of keep-all "
                                   << probe.predicted_allocated_peak_bytes);
  REQUIRE(lo < hi);
  int64_t distinct = 0, previous_peak = -1;
  for (int i = 0; i < 7; ++i) {
    const int64_t budget = lo + (hi - lo) * i / 6;
    INFO("budget " << budget);
    const CheckpointPlan plan = plan_checkpointing(step, on_cuda(budget));
    WARN("budget " << budget << ": predicted reserved peak " << plan.predicted_reserved_peak_bytes
                   << ", allocated peak " << plan.predicted_allocated_peak_bytes << ", " << plan.kept.size()
                   << " kept");
    REQUIRE(plan.predicted_peak_bytes == plan.predicted_reserved_peak_bytes);
    CHECK(plan.predicted_peak_bytes <= budget);
    cuda_synchronize();
    empty_cache(cuda);
    reset_peak_memory_stats(cuda);
    CHECK(plan.check(cuda).empty());
    const remat::testing::StepResult measured =
        gpt_train_step(kShape, cuda, nn::ActivationCheckpointing::selective(plan.policy()));
    CHECK(measured.reserved_peak == plan.predicted_reserved_peak_bytes);
    CHECK(measured.peak == plan.predicted_allocated_peak_bytes);
    CHECK(measured.reserved_peak <= budget);
    WARN("measured reserved peak " << measured.reserved_peak << ", allocated peak " << measured.peak);
    if (plan.predicted_peak_bytes != previous_peak) ++distinct;
    previous_peak = plan.predicted_peak_bytes;
  }
  CHECK(distinct >= 3);  // the sweep reaches different plans, not one plan seven times
  empty_cache(cuda);
}

TEST_CASE("planner on CUDA: a plan of reserved bytes says when the cache is not empty", "[planner][cuda_memory]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device cuda = testing::cuda0();
  const CheckpointPlan plan = plan_checkpointing(planned_gpt_step(kShape), on_cuda(int64_t{1} << 40));
  cuda_synchronize();
  empty_cache(cuda);
  CHECK(plan.check(cuda).empty());
  {
    Tensor t = empty({1000}, TensorOptions().device(cuda));
    CHECK_THAT(plan.check(cuda),
               Catch::StartsWith("the plan predicts reserved memory from an empty cache, but cuda:0 holds 2097152 "
                                 "bytes reserved in 1 segments (4096 allocated by live tensors)"));
  }
  CHECK_THAT(plan.check(Device{kCPU}), Catch::StartsWith("the plan bounds reserved memory on cuda:0, not on cpu"));
  empty_cache(cuda);
  CHECK(plan.check(cuda).empty());
}

TEST_CASE("planner on CUDA: a budget below the minimum names it in both counters", "[planner][cuda_memory]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const PlannedStep step = planned_gpt_step(kShape);
  const CheckpointPlan probe = plan_checkpointing(step, on_cuda(int64_t{1} << 40));
  PlannerOptions allocated = on_cuda(int64_t{1} << 40);
  allocated.counter = MemoryCounter::Allocated;
  const int64_t min_allocated = plan_checkpointing(step, allocated).recompute_all_peak_bytes;
  std::string message;
  try {
    plan_checkpointing(step, on_cuda(probe.recompute_all_peak_bytes - 1));
  } catch (const CheckpointError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::StartsWith("plan_checkpointing: no plan fits a budget of " +
                                        std::to_string(probe.recompute_all_peak_bytes - 1) +
                                        " bytes of reserved memory: the minimum feasible peak is " +
                                        std::to_string(probe.recompute_all_peak_bytes) + " bytes ("));
  CHECK_THAT(message, Catch::Contains("everything recomputable recomputed); its peak of allocated memory is " +
                                      std::to_string(min_allocated) + " bytes (") &&
                          Catch::EndsWith("), reserved counted from an empty cache"));
}

