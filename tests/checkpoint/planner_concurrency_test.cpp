// Tests checkpoint/planner.cpp (with engine/core/dry_run.h) under threads: plans made at once in
// several threads equal the same plans made one after the other, a plan made while another thread
// trains on the CPU equals the plan made alone, and a measured CPU step is unaffected by planning
// in another thread. Catch2 is not thread-safe: the threads only record, the main thread checks.
// CI also runs this file under ThreadSanitizer (--config=tsan).
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "remat.h"
#include "tests/testing/planned_steps.h"

using namespace remat;
using remat::testing::GptShape;
using remat::testing::plan_fingerprint;

namespace {

// Four different models, activation-bound enough for the search to run.
const std::vector<GptShape> kModels = {
    {4, 32, 16, 2, 13, 2},
    {2, 48, 16, 4, 11, 3},
    {4, 24, 32, 2, 17, 2},
    {3, 32, 24, 3, 19, 2},
};
constexpr int64_t kMaxDryRuns = 40;  // a short search: the point is the threads, not the plan

PlannerOptions options_for(int64_t budget) {
  PlannerOptions o{budget};
  o.max_dry_runs = kMaxDryRuns;
  return o;
}

// A budget a third of the way into the model's feasible range.
int64_t budget_for(const GptShape& s) {
  CheckpointPlan bounds = plan_checkpointing(remat::testing::planned_gpt_step(s), options_for(int64_t{1} << 40));
  REQUIRE(bounds.recompute_all_peak_bytes < bounds.keep_all_peak_bytes);
  return bounds.recompute_all_peak_bytes + (bounds.keep_all_peak_bytes - bounds.recompute_all_peak_bytes) / 3;
}

}  // namespace

TEST_CASE("planner in threads: plans for different models made at once equal the plans made one after the other",
          "[planner][threads]") {
  const size_t n = kModels.size();
  std::vector<int64_t> budgets;
  std::vector<std::string> alone;
  for (const GptShape& s : kModels) {
    budgets.push_back(budget_for(s));
    alone.push_back(plan_fingerprint(plan_checkpointing(remat::testing::planned_gpt_step(s), options_for(budgets.back()))));
  }
  std::vector<std::string> together(n);
  std::vector<std::string> errors(n);
  std::atomic<size_t> ready{0};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      ++ready;
      while (ready.load() < n) std::this_thread::yield();  // start together
      try {
        together[i] = plan_fingerprint(
            plan_checkpointing(remat::testing::planned_gpt_step(kModels[i]), options_for(budgets[i])));
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < n; ++i) {
    INFO("model " << i << ", budget " << budgets[i]);
    CHECK(errors[i].empty());
    CHECK(together[i] == alone[i]);
  }
  // Peaks, kept sets and costs are in the fingerprint; the plans differ from model to model.
  CHECK(alone[0] != alone[1]);
}

TEST_CASE("planner in threads: a plan made while another thread trains on the CPU equals the plan made alone",
          "[planner][threads]") {
  const GptShape model = kModels[1], trained = kModels[0];
  const int64_t budget = budget_for(model);
  const std::string alone = plan_fingerprint(plan_checkpointing(remat::testing::planned_gpt_step(model), options_for(budget)));
  std::atomic<bool> planned{false};
  std::atomic<int> steps{0};
  std::thread trainer([&] {
    while (!planned.load() || steps.load() < 1) {
      remat::testing::gpt_train_step(trained, Device{kCPU}, nn::ActivationCheckpointing::full());
      ++steps;
    }
  });
  const std::string during = plan_fingerprint(plan_checkpointing(remat::testing::planned_gpt_step(model), options_for(budget)));
  planned = true;
  trainer.join();
  CHECK(steps.load() >= 1);
  CHECK(during == alone);
}

TEST_CASE("planner in threads: a measured CPU step is unaffected by planning in another thread",
          "[planner][threads]") {
  const GptShape trained = kModels[3], planned_model = kModels[2];
  const int64_t budget = budget_for(planned_model);
  auto measure = [&] {
    MemoryTracker tracker(Device{kCPU});
    remat::testing::StepResult r = remat::testing::gpt_train_step(trained, Device{kCPU}, nn::ActivationCheckpointing::full());
    return std::make_pair(r, tracker.allocation_sizes());
  };
  const auto alone = measure();
  REQUIRE(alone.first.flops > 0);
  std::atomic<bool> measured{false};
  std::atomic<int> plans{0};
  std::thread planner([&] {
    while (!measured.load() || plans.load() < 1) {
      plan_checkpointing(remat::testing::planned_gpt_step(planned_model), options_for(budget));
      ++plans;
    }
  });
  std::vector<std::pair<remat::testing::StepResult, std::vector<int64_t>>> during;
  for (int i = 0; i < 3; ++i) during.push_back(measure());
  measured = true;
  planner.join();
  CHECK(plans.load() >= 1);
  for (const auto& d : during) {
    CHECK(d.first.peak == alone.first.peak);
    CHECK(d.first.flops == alone.first.flops);
    CHECK(remat::testing::bitwise_equal(d.first.loss_and_grads, alone.first.loss_and_grads));
    CHECK(d.second == alone.second);  // the dry runs allocate nothing on the CPU
  }
}

TEST_CASE("planner in threads: one benchmarking estimator serves plans made at once", "[planner][threads]") {
  const GptShape model = kModels[0];
  auto estimator = std::make_shared<RuntimeEstimator>(EstimateMode::kBenchmark, Device{kCPU});
  auto options = [&](int64_t budget) {
    PlannerOptions o = options_for(budget);
    o.estimator = estimator;
    return o;
  };
  const int64_t budget = budget_for(model);
  const std::string alone = plan_fingerprint(plan_checkpointing(remat::testing::planned_gpt_step(model), options(budget)));
  const int64_t measured = estimator->benchmarked_calls();
  REQUIRE(measured > 0);
  constexpr int kThreads = 3;
  std::vector<std::string> together(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      together[t] = plan_fingerprint(plan_checkpointing(remat::testing::planned_gpt_step(model), options(budget)));
    });
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) CHECK(together[t] == alone);  // priced from the same measurements
  CHECK(estimator->benchmarked_calls() == measured);
}
