// Tests checkpoint/planner.cpp on kCUDA (under --config=cuda_emu, the emulated device): a budget on
// reserved memory (the default for CUDA) is met by the real step, whose max_memory_reserved is
// the plan's prediction to the byte, across a sweep of seven budgets; with a host budget, plans
// that keep, recompute and offload meet the device and host peaks to the byte across a sweep.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/cost_model_defaults.h"
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


namespace {

// A device whose compute is slow beside its host link (1 TFLOP/s, 100 GB/s of memory, the H200's
// PCIe 5.0 link): recomputing a matmul costs more than moving its output, so that plans offload.
// At an H200's own speeds (on_cuda) the tiny GPT's outputs are cheaper to recompute than to move.
PlannerOptions slow_device(int64_t budget, int64_t host_budget = 0) {
  PlannerOptions o = on_cuda(budget);
  o.peak_flops = 1e12;
  o.bandwidth = 1e11;
  o.host_budget_bytes = host_budget;
  return o;
}

PlannerOptions offloading(int64_t budget, int64_t host_budget) { return slow_device(budget, host_budget); }

}  // namespace

TEST_CASE("planner on CUDA with offload: a sweep of budgets, device and host peaks met to the byte, the gradients "
          "bitwise those of no checkpointing, never dearer than without offload",
          "[planner][offload][cuda_memory]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device cuda = testing::cuda0();
  const PlannedStep step = planned_gpt_step(kShape);
  const CheckpointPlan probe = plan_checkpointing(step, on_cuda(int64_t{1} << 40));
  const int64_t lo = probe.recompute_all_peak_bytes, hi = probe.keep_all_peak_bytes;
  REQUIRE(lo < hi);
  cuda_synchronize();
  empty_cache(cuda);
  const remat::testing::StepResult plain = gpt_train_step(kShape, cuda, nn::ActivationCheckpointing::none());
  REQUIRE(!plain.loss_and_grads.empty());
  const int64_t host_budget = int64_t{64} << 20;
  int64_t offloading_plans = 0;
  for (int i = 0; i < 5; ++i) {
    const int64_t budget = lo + (hi - lo) * i / 4;
    INFO("budget " << budget);
    const CheckpointPlan without = plan_checkpointing(step, slow_device(budget));
    const CheckpointPlan plan = plan_checkpointing(step, offloading(budget, host_budget));
    WARN("budget " << budget << ": " << plan.kept.size() << " kept, " << plan.offloaded.size() << " offloaded ("
                   << plan.offloaded_bytes << " bytes, host peak " << plan.predicted_host_peak_bytes
                   << "); modeled cost " << plan.predicted_cost_seconds() * 1e6 << " us (recompute "
                   << plan.predicted_overhead_seconds * 1e6 << ", transfer " << plan.predicted_transfer_seconds * 1e6
                   << "), without offload " << without.predicted_cost_seconds() * 1e6 << " us");
    CHECK(plan.predicted_peak_bytes <= budget);
    CHECK(plan.predicted_host_peak_bytes <= host_budget);
    CHECK(plan.predicted_cost_seconds() <= without.predicted_cost_seconds());
    CHECK(without.offloaded.empty());
    CHECK(without.predicted_transfer_seconds == 0);
    CHECK(plan.host_link_bandwidth == kH200HostLinkBandwidth);
    if (!plan.offloaded.empty()) ++offloading_plans;
    CHECK((plan.offloaded.empty() == (plan.offloaded_bytes == 0)));
    cuda_synchronize();
    empty_cache(cuda);
    REQUIRE(plan.check(cuda).empty());
    const remat::testing::StepResult measured = gpt_train_step(kShape, cuda, nn::ActivationCheckpointing::planned(plan));
    cuda_synchronize();
    CHECK(measured.reserved_peak == plan.predicted_reserved_peak_bytes);
    CHECK(measured.peak == plan.predicted_allocated_peak_bytes);
    CHECK(max_offloaded_memory_allocated(cuda) == plan.predicted_host_peak_bytes);
    CHECK(checkpoint_stats().total.sac_bytes_offloaded == plan.offloaded_bytes);
    CHECK(offloaded_memory_allocated(cuda) == 0);
    CHECK(remat::testing::bitwise_equal(measured.loss_and_grads, plain.loss_and_grads));
  }
  CHECK(offloading_plans >= 2);  // the sweep reaches plans that offload, not only keep-sets
  empty_cache(cuda);
}

TEST_CASE("planner on CUDA with offload: the summary says per region what is kept, recomputed and offloaded",
          "[planner][offload]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const PlannedStep step = planned_gpt_step(kShape);
  const CheckpointPlan probe = plan_checkpointing(step, on_cuda(int64_t{1} << 40));
  const int64_t budget = probe.recompute_all_peak_bytes + (probe.keep_all_peak_bytes - probe.recompute_all_peak_bytes) / 4;
  const CheckpointPlan plan = plan_checkpointing(step, offloading(budget, int64_t{64} << 20));
  REQUIRE(!plan.offloaded.empty());
  const std::string summary = plan.summary();
  INFO(summary);
  CHECK_THAT(summary, Catch::Contains("offload: " + std::to_string(plan.offloaded.size()) + " outputs to host and back"));
  CHECK_THAT(summary, Catch::Contains("(modeled)"));
  CHECK_THAT(summary, Catch::Contains("offloaded   offl bytes"));
  // The rows' offloaded counts add up to the plan's.
  int64_t rows = 0;
  std::istringstream lines(summary);
  std::string line;
  bool table = false;
  while (std::getline(lines, line)) {
    if (line.rfind("region", 0) == 0) {
      table = true;
      continue;
    }
    if (!table) continue;
    if (line.empty() || line[0] == '(') break;  // the legend after the rows
    std::istringstream cols(line);
    std::vector<std::string> words;
    for (std::string w; cols >> w;) words.push_back(w);
    REQUIRE(words.size() >= 3);
    rows += std::stoll(words[words.size() - 3]);  // "... <offloaded> <bytes> MiB"
  }
  CHECK(rows == static_cast<int64_t>(plan.offloaded.size()));
  // The same keep-set and offloads, priced again, give the same figures.
  const CheckpointPlan again = plan.with_kept(step, plan.kept, plan.offloaded);
  CHECK(again.predicted_peak_bytes == plan.predicted_peak_bytes);
  CHECK(again.predicted_host_peak_bytes == plan.predicted_host_peak_bytes);
  CHECK(again.predicted_transfer_seconds == plan.predicted_transfer_seconds);
  CHECK(again.offloaded == plan.offloaded);
}

TEST_CASE("planner on CUDA with offload: bad input names the bytes and the device", "[planner][offload][errors]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const PlannedStep step = planned_gpt_step(kShape);
  const CheckpointPlan probe = plan_checkpointing(step, on_cuda(int64_t{1} << 40));
  // A host budget that holds no candidate.
  std::string message;
  try {
    plan_checkpointing(step, offloading(probe.keep_all_peak_bytes, 100));
  } catch (const CheckpointError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::StartsWith("plan_checkpointing: a host budget of 100 bytes holds no output the plan "
                                        "could offload: the smallest, '") &&
                          Catch::EndsWith(" bytes (host_budget_bytes = 0 plans without offload)"));
  // Offload on the CPU.
  PlannerOptions cpu{probe.keep_all_peak_bytes};
  cpu.host_budget_bytes = 1 << 20;
  CHECK_THROWS_WITH(plan_checkpointing(step, cpu),
                    "plan_checkpointing: offload (host_budget_bytes = 1048576) needs a CUDA device, but "
                    "options.device is cpu, whose tensors are in host memory already");
  PlannerOptions negative = offloading(probe.keep_all_peak_bytes, -1);
  CHECK_THROWS_WITH(plan_checkpointing(step, negative),
                    "plan_checkpointing: host_budget_bytes and host_link_bandwidth must not be negative, got -1 bytes "
                    "and 0.000000 bytes/s");
  // A plan that offloads, run on the CPU: the policy names the device.
  const int64_t budget = probe.recompute_all_peak_bytes + (probe.keep_all_peak_bytes - probe.recompute_all_peak_bytes) / 4;
  const CheckpointPlan plan = plan_checkpointing(step, offloading(budget, int64_t{64} << 20));
  REQUIRE(!plan.offloaded.empty());
  message.clear();
  try {
    gpt_train_step(kShape, Device{kCPU}, nn::ActivationCheckpointing::planned(plan));
  } catch (const CheckpointError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("CheckpointPlan: the plan offloads '") &&
                          Catch::Contains("' to host memory, but the call runs on cpu, which does not offload (the plan "
                                          "was made for cuda:0: run it there, or plan without host_budget_bytes)"));
  // with_kept: one call both kept and offloaded; offload in a plan for the CPU.
  CHECK_THROWS_WITH(plan.with_kept(step, {plan.offloaded[0]}, {plan.offloaded[0]}),
                    "CheckpointPlan::with_kept: '" + plan.offloaded[0] + "' is both kept and offloaded");
  const CheckpointPlan on_cpu = plan_checkpointing(step, PlannerOptions{probe.keep_all_peak_bytes});
  CHECK_THROWS_WITH(on_cpu.with_kept(step, {}, {plan.offloaded[0]}),
                    "CheckpointPlan::with_kept: offload needs a plan made for a CUDA device, but this plan is for cpu");
  // The host link: on the emulated device, the datasheet's figure, labelled.
  if (cuda::is_emulated()) {
    CHECK(default_host_link_bandwidth(testing::cuda0()) == kH200HostLinkBandwidth);
    CHECK(std::string(host_link_bandwidth_source(testing::cuda0())) ==
          "PCIe 5.0 x16 datasheet (emulated device: no link)");
  }
}
