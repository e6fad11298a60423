// Tests checkpoint/planner.{h,cpp}: plans made by dry runs on Meta, run for real on the CPU. Every
// figure is exact (no timing): the measured peak is the predicted one to the byte, the FLOPs
// recomputed are the plan's, and the losses are bitwise those of a run without checkpointing.
// [slow]: the long single-threaded searches, which the ThreadSanitizer step of CI leaves out.
#include <catch2/catch.hpp>

#include <algorithm>

#include "checkpoint/stats_detail.h"
#include "engine/core/scope_path.h"
#include "remat.h"
#include "tests/testing/matchers.h"
#include "tests/testing/planned_steps.h"

using namespace remat;
using Catch::Matchers::Contains;
using remat::testing::What;

namespace {

using Shape5 = remat::testing::GptShape;
// Activations decide the peak.
const Shape5 kActivationBound{4, 64, 32, 2, 17, 3};
// One block: at most 16 candidates, for the exhaustive search.
const Shape5 kOneBlock{2, 8, 16, 2, 11, 1};

using remat::testing::bitwise_equal;
using remat::testing::StepResult;

StepResult train_step(const Shape5& s, Device device, const nn::ActivationCheckpointing& ac) {
  return remat::testing::gpt_train_step(s, device, ac);
}

PlannedStep planned_step(const Shape5& s) { return remat::testing::planned_gpt_step(s); }

// The cost model on one fixed machine (FMA peak 490 GFLOP/s, copy bandwidth 12 GB/s: two AVX-512
// cores) instead of the measured defaults, so that the plans these tests compare are the same on
// every machine and in every run.
PlannerOptions fixed_machine(int64_t budget_bytes) {
  PlannerOptions o{budget_bytes};
  o.peak_flops = 4.9e11;
  o.bandwidth = 1.2e10;
  return o;
}

}  // namespace

TEST_CASE("planner: a sweep of budgets: each plan fits, is exact on the CPU, and costs less as budgets grow",
          "[planner][slow]") {
  const Shape5 s = kActivationBound;
  PlannedStep step = planned_step(s);
  StepResult plain = train_step(s, Device{kCPU}, nn::ActivationCheckpointing::none());
  CheckpointPlan probe = plan_checkpointing(step, fixed_machine(int64_t{1} << 40));
  const int64_t lo = probe.recompute_all_peak_bytes, hi = probe.keep_all_peak_bytes;
  REQUIRE(lo < hi);
  CHECK(probe.predicted_peak_bytes == hi);  // a budget above everything keeps all
  CHECK(probe.recompute_flops == 0);
  CHECK(hi <= plain.peak);  // keeping all backward needs costs no more than no checkpointing

  double previous_cost = std::numeric_limits<double>::infinity();
  const int kBudgets = 6;
  for (int i = 0; i <= kBudgets; ++i) {
    const int64_t budget = lo + (hi - lo) * i / kBudgets;
    INFO("budget " << budget << " (" << i << "/" << kBudgets << " of [" << lo << ", " << hi << "])");
    CheckpointPlan plan = plan_checkpointing(step, fixed_machine(budget));
    CHECK(plan.predicted_peak_bytes <= budget);
    StepResult real = train_step(s, Device{kCPU}, nn::ActivationCheckpointing::planned(plan));
    CHECK(real.peak == plan.predicted_peak_bytes);
    CHECK(real.peak <= budget);
    CHECK(real.flops == plan.recompute_flops);
    CHECK(bitwise_equal(real.loss_and_grads, plain.loss_and_grads));
    // The recompute cost the plan minimises falls as the budget grows. Its FLOPs alone need not:
    // the cost model also prices bytes moved, so a larger budget may trade recomputed elementwise
    // ops (bytes) for a recomputed matmul (FLOPs).
    CHECK(plan.predicted_overhead_seconds <= previous_cost);
    previous_cost = plan.predicted_overhead_seconds;
    if (i == kBudgets) {
      CHECK(plan.recompute_flops == 0);
      CHECK(plan.predicted_overhead_seconds == 0);
    }
  }
}

TEST_CASE("planner: a plan keeps no output its checkpoint releases unread, so PyTorch's SAC holds the same bytes",
          "[planner]") {
  // remat's checkpoint releases, when a region's forward ends, the kept outputs a rerun never
  // reaches (early_stop); PyTorch's SAC storage holds every kept output to the region's backward,
  // as remat's does without early stop. A plan keeps none that backward does not read, so the
  // activation bytes are the same both ways (and a plan file gives PyTorch remat's bytes).
  const Shape5 s = kActivationBound;
  PlannedStep step = planned_step(s);
  CheckpointPlan probe = plan_checkpointing(step, fixed_machine(int64_t{1} << 40));
  const int64_t lo = probe.recompute_all_peak_bytes, hi = probe.keep_all_peak_bytes;
  const Device meta{kMeta};  // a dry run counting like the CPU: the CPU's bytes
  for (int i = 0; i <= 4; ++i) {
    const int64_t budget = lo + (hi - lo) * i / 4;
    INFO("budget " << budget);
    nn::ActivationCheckpointing ac = nn::ActivationCheckpointing::planned(plan_checkpointing(step, fixed_machine(budget)));
    const int64_t released = train_step(s, meta, ac).activation_bytes;
    ac.early_stop = false;
    CHECK(train_step(s, meta, ac).activation_bytes == released);
  }
  // A hand-made policy that keeps every matmul keeps mlp.fc2's, which nothing reads: without early
  // stop (PyTorch's storage) it is held, 1 block x [batch * seq, embd] f32 each
  nn::ActivationCheckpointing mm = nn::ActivationCheckpointing::selective(policies::save_ops({"aten::addmm", "aten::bmm"}));
  const int64_t released = train_step(s, meta, mm).activation_bytes;
  mm.early_stop = false;
  CHECK(train_step(s, meta, mm).activation_bytes - released == s.layers * s.batch * s.seq * s.embd * 4);
}

TEST_CASE("planner: at full checkpointing's own peak, the plan recomputes no more than full checkpointing",
          "[planner]") {
  const Shape5 s = kActivationBound;
  StepResult full = train_step(s, Device{kCPU}, nn::ActivationCheckpointing::full());
  CheckpointPlan plan = plan_checkpointing(planned_step(s), fixed_machine(full.peak));
  CHECK(plan.predicted_peak_bytes <= full.peak);
  CHECK(plan.recompute_flops <= full.flops);
  CHECK(full.flops > 0);
}

TEST_CASE("planner: at a hand-made SAC policy's own peak, the plan costs no more than the policy's choice",
          "[planner][slow]") {
  const Shape5 s = kActivationBound;
  PlannedStep step = planned_step(s);
  CheckpointPlan probe = plan_checkpointing(step, fixed_machine(int64_t{1} << 40));
  const std::vector<std::pair<const char*, PolicyFn>> hand_made = {
      {"save every matmul", policies::save_matmuls()},
      {"every matmul but mlp.fc2", policies::compose({policies::recompute_scopes({"*.mlp.fc2"}), policies::save_matmuls()})},
      {"every other mm", policies::save_every_other({"aten::mm", "aten::addmm"})},
  };
  for (const auto& [name, policy] : hand_made) {
    INFO("policy: " << name);
    // What the policy keeps, as the planner names calls (only outputs backward needs matter).
    std::vector<std::string> kept;
    PolicyFn recording = [&, policy = policy](const SelectiveCheckpointContext& ctx, const OperatorHandle& op,
                                              const std::vector<IValue>& args) {
      CheckpointPolicy p = policy(ctx, op, args);
      std::string key = (ctx.scope.empty() ? std::string("<top>") : ctx.scope) + " / " + op.name() + " / #" +
                        std::to_string(ctx.index);
      if ((p == CheckpointPolicy::MUST_SAVE || p == CheckpointPolicy::PREFER_SAVE) && !ctx.is_recompute &&
          std::find(probe.candidates.begin(), probe.candidates.end(), key) != probe.candidates.end() &&
          std::find(kept.begin(), kept.end(), key) == kept.end())
        kept.push_back(key);
      return p;
    };
    StepResult real = train_step(s, Device{kCPU}, nn::ActivationCheckpointing::selective(recording));
    CheckpointPlan choice = probe.with_kept(step, kept);
    CHECK(choice.predicted_peak_bytes <= real.peak);  // the needed part of what the policy keeps
    CheckpointPlan plan = plan_checkpointing(step, fixed_machine(real.peak));
    CHECK(plan.predicted_peak_bytes <= real.peak);
    CHECK(plan.predicted_overhead_seconds <= choice.predicted_overhead_seconds);
  }
}

TEST_CASE("planner: on one block, no keep-set that fits is cheaper than the plan by more than 5%", "[planner][slow]") {
  const Shape5 s = kOneBlock;
  PlannedStep step = planned_step(s);
  CheckpointPlan probe = plan_checkpointing(step, fixed_machine(int64_t{1} << 40));
  const std::vector<std::string>& cands = probe.candidates;
  REQUIRE(!cands.empty());
  REQUIRE(cands.size() <= 16);
  const int64_t lo = probe.recompute_all_peak_bytes, hi = probe.keep_all_peak_bytes;
  // Every keep-set, priced once; then each budget's best.
  std::vector<std::pair<int64_t, double>> all;  // peak, cost
  for (uint32_t mask = 0; mask < (1u << cands.size()); ++mask) {
    std::vector<std::string> kept;
    for (size_t i = 0; i < cands.size(); ++i)
      if (mask & (1u << i)) kept.push_back(cands[i]);
    CheckpointPlan p = probe.with_kept(step, kept);
    all.emplace_back(p.predicted_peak_bytes, p.predicted_overhead_seconds);
  }
  for (int i = 0; i <= 4; ++i) {
    const int64_t budget = lo + (hi - lo) * i / 4;
    INFO("budget " << budget);
    CheckpointPlan plan = plan_checkpointing(step, fixed_machine(budget));
    double best = std::numeric_limits<double>::infinity();
    for (const auto& [peak, cost] : all)
      if (peak <= budget) best = std::min(best, cost);
    CHECK(plan.predicted_overhead_seconds <= best * 1.05 + 1e-12);
  }
}

TEST_CASE("planner: a plan prices what it keeps; with_kept reprices another choice", "[planner]") {
  PlannedStep step = planned_step(kOneBlock);
  CheckpointPlan plan = plan_checkpointing(step, PlannerOptions{int64_t{1} << 40});
  CHECK(plan.kept.size() == plan.candidates.size());
  CheckpointPlan none = plan.with_kept(step, {});
  CHECK(none.predicted_peak_bytes == plan.recompute_all_peak_bytes);
  CHECK(none.recompute_flops > 0);
  CHECK(none.predicted_overhead_seconds > 0);
  std::string table = plan.summary();
  CHECK_THAT(table, Contains("checkpoint plan: budget") && Contains("layers.0") && Contains("kept bytes"));
  REQUIRE_THROWS_MATCHES(plan.with_kept(step, {"nowhere / aten::mm / #0"}), CheckpointError,
                         What(Contains("'nowhere / aten::mm / #0' is not one of the plan's candidates")));
}

TEST_CASE("planner: error paths name the budget, the minimum, and the call the plan was not made for",
          "[planner][errors]") {
  PlannedStep step = planned_step(kOneBlock);
  REQUIRE_THROWS_MATCHES(plan_checkpointing(step, PlannerOptions{0}), CheckpointError,
                         What(Contains("the memory budget must be positive, got 0 bytes")));
  REQUIRE_THROWS_MATCHES(plan_checkpointing(step, PlannerOptions{-5}), CheckpointError,
                         What(Contains("got -5 bytes")));
  CheckpointPlan plan = plan_checkpointing(step, PlannerOptions{int64_t{1} << 40});
  const int64_t minimum = plan.recompute_all_peak_bytes;
  REQUIRE_THROWS_MATCHES(plan_checkpointing(step, PlannerOptions{minimum - 1}), CheckpointError,
                         What(Contains("no plan fits a budget of " + std::to_string(minimum - 1) + " bytes") &&
                              Contains("the minimum feasible peak is " + std::to_string(minimum) + " bytes")));
  CHECK_NOTHROW(plan_checkpointing(step, PlannerOptions{minimum}));
  // The budget is checked against the profile's peak before any other dry run (keep-all's).
  int calls = 0;
  PlannedStep counted = [&](const PolicyFn& policy, Device device) {
    ++calls;
    step(policy, device);
  };
  REQUIRE_THROWS_AS(plan_checkpointing(counted, PlannerOptions{minimum - 1}), CheckpointError);
  CHECK(calls == 1);

  // Another model: a second block the plan never saw.
  Shape5 deeper = kOneBlock;
  deeper.layers = 2;
  REQUIRE_THROWS_MATCHES(train_step(deeper, Device{kMeta}, nn::ActivationCheckpointing::planned(plan)),
                         CheckpointError, What(Contains("'layers.1.") && Contains("was never seen when this plan was made")));
  // Another configuration: the same calls on longer sequences.
  Shape5 longer = kOneBlock;
  longer.seq = 16;
  REQUIRE_THROWS_MATCHES(train_step(longer, Device{kMeta}, nn::ActivationCheckpointing::planned(plan)),
                         CheckpointError, What(Contains("has arguments of shapes") && Contains("another configuration")));
  // A step without a selective region has nothing to plan.
  PlannedStep plain = [](const PolicyFn&, Device device) { train_step(kOneBlock, device, nn::ActivationCheckpointing::none()); };
  REQUIRE_THROWS_WITH(plan_checkpointing(plain, PlannerOptions{1 << 20}),
                      Contains("the step ran no checkpointed region with a selective policy"));
  REQUIRE_THROWS_WITH(plan_checkpointing(step, [] { PlannerOptions o{1 << 20}; o.device = Device{kMeta}; return o; }()),
                      Contains("options.device is the device to plan for (cpu or cuda), not meta"));
}

TEST_CASE("planner: priced by a benchmark of each call, a plan is as exact; one estimator measures each call once",
          "[planner][estimator][slow]") {
  const Shape5 s = kActivationBound;
  PlannedStep step = planned_step(s);
  StepResult plain = train_step(s, Device{kCPU}, nn::ActivationCheckpointing::none());
  auto estimator = std::make_shared<RuntimeEstimator>(EstimateMode::kBenchmark, Device{kCPU});
  PlannerOptions o{int64_t{1} << 40};
  o.estimator = estimator;
  CheckpointPlan bounds = plan_checkpointing(step, o);
  CHECK(bounds.estimate_mode == EstimateMode::kBenchmark);
  const int64_t measured = estimator->benchmarked_calls();
  CHECK(measured > 0);
  // Halfway between the extremes: the plan fits, runs to its predicted peak and FLOPs, and trains
  // exactly as no checkpointing does; its calls were all measured when the bounds were planned.
  o.budget_bytes = (bounds.recompute_all_peak_bytes + bounds.keep_all_peak_bytes) / 2;
  CheckpointPlan plan = plan_checkpointing(step, o);
  CHECK(estimator->benchmarked_calls() == measured);
  CHECK(plan.predicted_peak_bytes <= o.budget_bytes);
  CHECK(plan.predicted_overhead_seconds > 0);
  StepResult real = train_step(s, Device{kCPU}, nn::ActivationCheckpointing::planned(plan));
  CHECK(real.peak == plan.predicted_peak_bytes);
  CHECK(real.flops == plan.recompute_flops);
  CHECK(bitwise_equal(real.loss_and_grads, plain.loss_and_grads));
  CHECK_THAT(plan.summary(), Contains("(operator-level-benchmark)"));
  // with_kept prices with the same measurements.
  CheckpointPlan none = plan.with_kept(step, {});
  CHECK(none.estimate_mode == EstimateMode::kBenchmark);
  CHECK(none.predicted_overhead_seconds >= plan.predicted_overhead_seconds);
  CHECK(estimator->benchmarked_calls() == measured);
  // Made from the options alone, without a shared estimator.
  PlannerOptions own{o.budget_bytes};
  own.estimate_mode = EstimateMode::kBenchmark;
  CHECK(plan_checkpointing(step, own).estimate_mode == EstimateMode::kBenchmark);

  PlannerOptions mismatch{o.budget_bytes};
  mismatch.device = Device{kCUDA};
  mismatch.estimator = estimator;
  REQUIRE_THROWS_MATCHES(plan_checkpointing(step, mismatch), Error,
                         What(Contains("options.estimator prices calls on cpu, but options.device is cuda")));
}

TEST_CASE("planner: planning for CUDA counts the CUDA allocator's blocks", "[planner]") {
  PlannedStep step = planned_step(kOneBlock);
  PlannerOptions o{int64_t{1} << 40};
  o.device = Device{kCUDA};
  CheckpointPlan cuda = plan_checkpointing(step, o);
  CheckpointPlan cpu = plan_checkpointing(step, PlannerOptions{int64_t{1} << 40});
  CHECK(cuda.predicted_peak_bytes > cpu.predicted_peak_bytes);  // every tensor rounded up to 512 bytes
  CHECK(cuda.predicted_peak_bytes % 512 == 0);
  CHECK(meta_accounting() == kCPU);  // restored
}

TEST_CASE("planner: a step that is not the same step in every dry run is refused, naming the first differing call",
          "[planner][errors]") {
  // 2 layers on odd calls, 3 on even ones: the second dry run (keep-all) has a block more.
  int calls = 0;
  Shape5 two = kActivationBound, three = kActivationBound;  // activations matter: the planner searches
  two.layers = 2;
  three.layers = 3;
  PlannedStep changing = [&](const PolicyFn& policy, Device device) {
    ++calls;
    train_step(calls % 2 == 1 ? two : three, device, nn::ActivationCheckpointing::selective(policy));
  };
  REQUIRE_THROWS_MATCHES(plan_checkpointing(changing, PlannerOptions{int64_t{1} << 40}), CheckpointError,
                         What(Contains("plan_checkpointing: dry run 2 (keep-all): the step is not the same step as in "
                                       "the profiling run (dry run 1)") &&
                              Contains("is 'layers.2.") && Contains("in region 3 with arguments of shapes") &&
                              Contains("where the profiling run made only") &&
                              Contains("each call must run the same model on the same shapes")));
  CHECK(calls == 2);

  // The other way round: the dry run makes fewer calls than the profile.
  calls = 0;
  PlannedStep shrinking = [&](const PolicyFn& policy, Device device) {
    ++calls;
    train_step(calls % 2 == 1 ? three : two, device, nn::ActivationCheckpointing::selective(policy));
  };
  REQUIRE_THROWS_MATCHES(plan_checkpointing(shrinking, PlannerOptions{int64_t{1} << 40}), CheckpointError,
                         What(Contains("dry run 2 (keep-all)") && Contains("the profiling run ") &&
                              Contains("the first missing one is call") && Contains("'layers.2.")));

  // The same calls on other shapes, from the third dry run on (the search's first).
  calls = 0;
  Shape5 longer = two;
  longer.seq = 32;
  PlannedStep reshaping = [&](const PolicyFn& policy, Device device) {
    ++calls;
    train_step(calls <= 2 ? two : longer, device, nn::ActivationCheckpointing::selective(policy));
  };
  CheckpointPlan probe = plan_checkpointing(planned_step(two), PlannerOptions{int64_t{1} << 40});
  REQUIRE(probe.recompute_all_peak_bytes < probe.keep_all_peak_bytes);
  REQUIRE_THROWS_MATCHES(plan_checkpointing(reshaping, PlannerOptions{probe.recompute_all_peak_bytes}), CheckpointError,
                         What(Contains("dry run 3 (search at rung 1 of 5") && Contains("call 1 is 'layers.0") &&
                              Contains("[4, 32, 32]") && Contains("where the profiling run's was 'layers.0") &&
                              Contains("[4, 64, 32]")));

  // with_kept's dry run is checked against the plan's profile too.
  REQUIRE_THROWS_MATCHES(probe.with_kept(planned_step(longer), {}), CheckpointError,
                         What(Contains("CheckpointPlan::with_kept: dry run 1 (the plan's final check): the step is not "
                                       "the same step as in the profiling run of the plan: call 1 is 'layers.0")));
}

namespace {

int g_leaked_events = 0;
Tensor g_leaked_meta;  // a Meta tensor the failing step leaves alive

struct Marker : DispatchMode {
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    return op.call(args);
  }
};

// A step that fails in its `fail_on`-th call, leaving behind all it can: a dispatch mode pushed
// without a guard, grad mode off, a scope name, a storage observer, a live Meta tensor.
PlannedStep failing_step(int* calls, int fail_on, std::function<void()> raise) {
  return [=](const PolicyFn& policy, Device device) {
    ++*calls;
    train_step(kActivationBound, device, nn::ActivationCheckpointing::selective(policy));
    if (*calls < fail_on) return;
    DispatchModeTLS::push(std::make_shared<Marker>());
    autograd::GradMode::set_enabled(false);
    push_scope_name("left_behind");
    add_storage_observer([](const StorageEvent&) { ++g_leaked_events; });
    g_leaked_meta = empty({1000}, device);
    reset_checkpoint_stats();
    raise();
  };
}

}  // namespace

TEST_CASE("planner: a step that throws in a dry run: its error re-raised with the dry run's number and phase, "
          "and nothing left behind", "[planner][errors]") {
  const Device meta{kMeta};
  Tensor outer_meta = empty({10}, meta);  // the caller's Meta counters, with something alive
  reset_peak_memory_stats(meta);
  const int64_t meta_allocated = memory_allocated(meta), meta_peak = max_memory_allocated(meta);
  reset_checkpoint_stats();
  train_step(kOneBlock, Device{kCPU}, nn::ActivationCheckpointing::full());
  const CheckpointStats stats = checkpoint_stats();
  REQUIRE(stats.total.recomputations > 0);
  scope caller("caller");
  const size_t modes = DispatchModeTLS::size();
  MemoryTracker tracker(meta);
  const bool observers = has_storage_observers();
  CheckpointPlan probe = plan_checkpointing(planned_step(kActivationBound), PlannerOptions{int64_t{1} << 40});
  const int64_t budget = (probe.recompute_all_peak_bytes + probe.keep_all_peak_bytes) / 2;  // the search runs

  struct Case {
    int fail_on;
    std::function<void()> raise;
    std::string phase;
  };
  const std::vector<Case> cases = {
      {1, [] { throw Error("my step broke"); }, "dry run 1 (profile)"},
      {2, [] { throw CheckpointError("my region broke"); }, "dry run 2 (keep-all)"},
      {3, [] { throw std::runtime_error("my data loader broke"); },
       "dry run 3 (search at rung 1 of 5"},
  };
  for (const Case& c : cases) {
    INFO("fails on call " << c.fail_on);
    int calls = 0;
    PlannedStep step = failing_step(&calls, c.fail_on, c.raise);
    try {
      plan_checkpointing(step, PlannerOptions{budget});
      FAIL("no exception");
    } catch (const CheckpointError& e) {  // the user's type, with the context
      CHECK(c.fail_on == 2);
      CHECK_THAT(e.what(), Contains("plan_checkpointing: " + c.phase + ": the step threw: my region broke"));
    } catch (const Error& e) {
      CHECK(c.fail_on != 2);
      CHECK_THAT(e.what(), Contains("plan_checkpointing: " + c.phase));
      if (c.fail_on == 1) CHECK_THAT(e.what(), Contains("the step threw: my step broke"));
      if (c.fail_on == 3) {
        CHECK_THAT(e.what(), Contains("the step threw: my data loader broke"));
        CHECK_THROWS_AS(std::rethrow_if_nested(e), std::runtime_error);  // the original, nested
      }
    }
    CHECK(calls == c.fail_on);
    // As before the call: the Meta counters, the storage observers, the dispatch modes, grad mode,
    // the scope path, the recompute figures.
    CHECK(memory_allocated(meta) == meta_allocated);
    CHECK(max_memory_allocated(meta) == meta_peak);
    CHECK(has_storage_observers() == observers);
    const int leaked = g_leaked_events;
    { Tensor t = empty({4}); }
    CHECK(g_leaked_events == leaked);  // the observer the step added went with its dry run
    CHECK(DispatchModeTLS::size() == modes);
    CHECK(autograd::GradMode::is_enabled());
    CHECK(current_scope() == "caller");
    CHECK(stats_detail::planning_observer() == nullptr);
    CHECK(meta_accounting() == kCPU);
    const CheckpointStats after = checkpoint_stats();
    CHECK(after.total.recomputations == stats.total.recomputations);
    CHECK(after.regions.size() == stats.regions.size());
    CHECK(tracker.timeline().empty());  // the caller's tracker saw none of the dry runs
    g_leaked_meta = Tensor();
    CHECK(memory_allocated(meta) == meta_allocated);  // its free counts in its own dry run
  }
}

TEST_CASE("planner: a budget on reserved memory needs a CUDA device", "[planner]") {
  PlannerOptions o{int64_t{1} << 40};
  o.counter = MemoryCounter::Reserved;
  REQUIRE_THROWS_MATCHES(plan_checkpointing(planned_step(kOneBlock), o), CheckpointError,
                         Catch::Matchers::Message(
                             "plan_checkpointing: a budget on reserved memory needs a CUDA device, but options.device "
                             "is cpu (only the CUDA caching allocator's reserved bytes are predicted; use "
                             "MemoryCounter::Allocated)"));
  o.counter = MemoryCounter::Allocated;
  const CheckpointPlan plan = plan_checkpointing(planned_step(kOneBlock), o);
  CHECK(plan.counter == MemoryCounter::Allocated);
  CHECK(plan.predicted_allocated_peak_bytes == plan.predicted_peak_bytes);
  CHECK(plan.predicted_reserved_peak_bytes == 0);
  CHECK(plan.check(Device{kCPU}).empty());  // nothing assumed of the CPU allocator's cache
  CHECK(std::string(toString(MemoryCounter::Reserved)) == "reserved");
}
