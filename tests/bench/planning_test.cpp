// Tests bench/planning.{h,cpp}: the benchmark's --budget, --sweep and
// --sweep-at-strategies. Every figure is exact (no timing): a planned strategy run on the CPU
// peaks at the plan's prediction, within its budget, and recomputes what the plan said.
#include "bench/planning.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <limits>
#include <utility>

#include "tests/testing/matchers.h"

using namespace remat;
using namespace remat::bench;
using Catch::Matchers::Contains;
using remat::testing::What;

namespace {

// batch, seq, embd, heads, vocab, layers: two blocks, so what a block keeps moves the peak (with
// one block, its backward reruns all of it under any strategy).
const ModelShape kSmall{2, 32, 32, 2, 17, 2};

// A strategy as memory_vs_recompute runs it: a dry run on Meta, then the same steps on the CPU.
StrategyResult run(const Strategy& s) {
  StrategyResult r;
  r.name = s.name;
  record_predicted(run_training_steps(s, kSmall, Device{kMeta}, 3), 1, 0, &r);
  record_measured(run_training_steps(s, kSmall, Device{kCPU}, 3), 1, &r);
  return r;
}

StrategyResult run_plan(const CheckpointPlan& plan) {
  StrategyResult r = run(planned_strategy(plan, planned_name(plan.budget_bytes)));
  record_plan(plan, &r);
  return r;
}

// The cost model on one fixed machine (FMA peak 490 GFLOP/s, copy bandwidth 12 GB/s: two AVX-512
// cores) instead of the measured defaults, so that the plans compared below are the same on every
// machine and in every run.
PlanningArgs fixed_machine() {
  PlanningArgs m;
  m.peak_flops = 4.9e11;
  m.bandwidth = 1.2e10;
  return m;
}

const Strategy& strategy(const std::string& name) {
  static const std::vector<Strategy> all = all_strategies();
  for (const Strategy& s : all)
    if (s.name == name) return s;
  throw Error("no strategy " + name);
}

}  // namespace

TEST_CASE("planning: the flags' values, and the combinations that make no sense, are errors naming them",
          "[planning]") {
  CHECK(parse_budget("60MiB") == 60 << 20);
  CHECK(parse_budget("1.5GiB") == int64_t{3} << 29);
  CHECK(parse_budget("800KB") == 800000);
  CHECK(parse_budget("65536") == 65536);
  REQUIRE_THROWS_WITH(parse_budget("lots"), Contains("--budget: expected a size like 40MiB, 1.5GiB, 800KB or 65536, "
                                                     "got 'lots'"));
  REQUIRE_THROWS_WITH(parse_budget("60XB"), Contains("got '60XB'"));
  REQUIRE_THROWS_WITH(parse_budget("-1MiB"), Contains("--budget: the size must be positive, got '-1MiB'"));
  CHECK(parse_estimate("benchmark") == EstimateMode::kBenchmark);
  CHECK(parse_estimate("cost-model") == EstimateMode::kCostModel);
  REQUIRE_THROWS_WITH(parse_estimate("roofline"), Contains("--estimate must be benchmark (time each op call on the "
                                                           "machine) or cost-model (the roofline), got 'roofline'"));
  CHECK(parse_sweep("6") == 6);
  for (const char* bad : {"0", "-2", "six", "3x", ""})
    REQUIRE_THROWS_WITH(parse_sweep(bad), Contains("--sweep expects an integer >= 1 (how many budgets to plan), got '" +
                                                   std::string(bad) + "'"));
  PlanningArgs a;
  a.budget_bytes = 1 << 20;
  CHECK_NOTHROW(check_planning_args(a, /*dry_run=*/true));  // one plan, predicted only
  a.sweep = 2;
  CHECK_NOTHROW(check_planning_args(a, false));
  REQUIRE_THROWS_WITH(check_planning_args(a, true), Contains("--sweep 2 runs every plan for real; it cannot go with "
                                                             "--dry-run"));
  a.sweep = 0;
  a.sweep_at_strategies = true;
  REQUIRE_THROWS_WITH(check_planning_args(a, true), Contains("--sweep-at-strategies") && Contains("--dry-run"));
}

TEST_CASE("planning: --offload's value and its needs (a sweep, a CUDA device) are errors naming them",
          "[planning]") {
  CHECK(parse_offload("64MiB") == 64 << 20);
  CHECK(parse_offload("1.5GiB") == int64_t{3} << 29);
  REQUIRE_THROWS_WITH(parse_offload("lots"), Contains("--offload: expected a size like 40MiB, 1.5GiB, 800KB or "
                                                      "65536, got 'lots'"));
  REQUIRE_THROWS_WITH(parse_offload("0MiB"), Contains("--offload: the size must be positive, got '0MiB'"));
  PlanningArgs a;
  CHECK_NOTHROW(check_offload_args(a, "cpu", "cpu", false));  // no --offload: nothing to check
  a.offload_bytes = 64 << 20;
  REQUIRE_THROWS_WITH(check_offload_args(a, "cuda", "cuda", false),
                      Contains("--offload 64.0 MiB compares the two frontiers at the budgets of a sweep: it needs "
                               "--sweep N"));
  a.sweep = 4;
  CHECK_NOTHROW(check_offload_args(a, "cuda", "cuda", false));
  CHECK_NOTHROW(check_offload_args(a, "cuda", "cuda", true));
  CHECK_NOTHROW(check_offload_args(a, "cpu", "cuda", true));  // a dry run counting like cuda
  REQUIRE_THROWS_WITH(check_offload_args(a, "cpu", "cpu", false),
                      Contains("--offload 64.0 MiB moves a CUDA device's tensors to pinned host memory: it needs "
                               "--device cuda, got --device cpu"));
  REQUIRE_THROWS_WITH(check_offload_args(a, "cpu", "cuda", false), Contains("it needs --device cuda, got --device cpu"));
  REQUIRE_THROWS_WITH(check_offload_args(a, "cpu", "cpu", true),
                      Contains("--offload 64.0 MiB plans for a CUDA device: its dry runs must count like cuda "
                               "(--device cuda or --meta-accounting cuda), got --meta-accounting cpu with --device cpu"));
  REQUIRE_THROWS_WITH(check_offload_args(a, "cuda", "cpu", false), Contains("got --meta-accounting cpu with --device "
                                                                            "cuda"));
  // An offload sweep compares modeled costs: it may be a dry run, unlike a plain sweep.
  CHECK_NOTHROW(check_planning_args(a, /*dry_run=*/true));
  a.offload_bytes = 0;
  REQUIRE_THROWS_WITH(check_planning_args(a, true), Contains("--sweep 4 runs every plan for real; it cannot go with "
                                                             "--dry-run") && Contains("--offload SIZE --sweep N --dry-run"));
}

TEST_CASE("planning: a planned row is named by its budget as people write it", "[planning]") {
  CHECK(planned_name(60 << 20) == "plan@60.0MiB");
  CHECK(planned_name(60 << 20, /*offload=*/true) == "plan+offload@60.0MiB");
}

TEST_CASE("planning: record_plan carries the plan's offload figures onto the result", "[planning]") {
  CheckpointPlan plan;
  plan.budget_bytes = 48 << 20;
  plan.predicted_peak_bytes = (48 << 20) - 512;
  plan.predicted_recompute_seconds = 0.004;
  plan.predicted_overhead_seconds = 0.005;  // with the transfer
  plan.host_budget_bytes = 16 << 20;
  plan.predicted_host_peak_bytes = 6 << 20;
  plan.offloaded_bytes = 9 << 20;
  plan.offloaded = {"h.0 / aten::mm / #0", "h.1 / aten::mm / #0"};
  plan.predicted_transfer_seconds = 0.001;
  plan.host_link_bandwidth = 5e10;
  StrategyResult r;
  record_plan(plan, &r);
  CHECK(r.plan_host_budget_bytes == plan.host_budget_bytes);
  CHECK(r.plan_host_peak_bytes == plan.predicted_host_peak_bytes);
  CHECK(r.plan_offloaded_bytes == plan.offloaded_bytes);
  CHECK(r.plan_offloaded_calls == 2);
  CHECK(r.plan_transfer_seconds == plan.predicted_transfer_seconds);
  CHECK(r.plan_host_link_bandwidth == plan.host_link_bandwidth);
  CHECK(r.plan_recompute_seconds == plan.predicted_recompute_seconds);
  CHECK(r.plan_overhead_seconds == plan.predicted_cost_seconds());
  StrategyResult keep_recompute;
  record_plan(CheckpointPlan{}, &keep_recompute);
  CHECK(keep_recompute.plan_host_budget_bytes == 0);
  CHECK(keep_recompute.plan_transfer_seconds == 0);
}

TEST_CASE("planning: sweep budgets are evenly spaced, both ends included", "[planning]") {
  CHECK(sweep_budgets(100, 200, 5) == std::vector<int64_t>{100, 125, 150, 175, 200});
  CHECK(sweep_budgets(100, 200, 2) == std::vector<int64_t>{100, 200});
  CHECK(sweep_budgets(100, 200, 1) == std::vector<int64_t>{150});
  CHECK(sweep_budgets(7, 7, 3) == std::vector<int64_t>{7, 7, 7});
  const int64_t big = int64_t{60} << 30;  // no overflow for sizes of tens of GiB
  CHECK(sweep_budgets(big, 2 * big, 3) == std::vector<int64_t>{big, big + big / 2, 2 * big});
  REQUIRE_THROWS_WITH(sweep_budgets(1, 2, 0), Contains("the number of budgets must be at least 1, got 0"));
  REQUIRE_THROWS_WITH(sweep_budgets(2, 1, 3), Contains("the range [2, 1] is empty"));
}

TEST_CASE("planning: the planned row peaks at the plan's prediction, within its budget, with no checkpointing's "
          "losses",
          "[planning]") {
  const TrainingOptions o;
  const CheckpointPlan bounds = plan_bounds(kSmall, o, Device{kCPU});
  const int64_t lo = bounds.recompute_all_peak_bytes, hi = bounds.keep_all_peak_bytes;
  REQUIRE(lo < hi);
  CHECK(bounds.predicted_peak_bytes == hi);
  const int64_t budget = lo + (hi - lo) / 2;
  const CheckpointPlan plan = plan_budget(kSmall, o, budget, Device{kCPU});
  CHECK(plan.budget_bytes == budget);
  CHECK(plan.planning_seconds > 0);
  CHECK(plan.dry_runs > 0);
  StrategyResult r = run_plan(plan);
  CHECK(r.planned());
  CHECK(r.budget_bytes == budget);
  CHECK(r.measured.peak_bytes == plan.predicted_peak_bytes);  // every measured step, not only the planner's last
  CHECK(r.predicted.peak_bytes == plan.predicted_peak_bytes);
  CHECK(r.measured.peak_bytes <= budget);
  CHECK(r.fits());
  CHECK(r.recomputed_flops_per_step == plan.recompute_flops);
  CHECK(r.plan_predicted_peak_bytes == plan.predicted_peak_bytes);
  CHECK(r.plan_recompute_flops == plan.recompute_flops);
  CHECK(r.planning_dry_runs == plan.dry_runs);
  const StrategyResult none = run(strategy("none"));
  CHECK(std::memcmp(&r.final_loss, &none.final_loss, sizeof(double)) == 0);  // bitwise
  // A result over its budget reads as not fitting.
  StrategyResult over = r;
  over.budget_bytes = r.measured.peak_bytes - 1;
  CHECK_FALSE(over.fits());
}

TEST_CASE("planning: a sweep across the feasible range: each point fits, recompute falls as budgets grow",
          "[planning]") {
  const TrainingOptions o;
  const CheckpointPlan bounds = plan_bounds(kSmall, o, Device{kCPU}, fixed_machine());
  double previous_cost = std::numeric_limits<double>::infinity();
  double previous_flops = std::numeric_limits<double>::infinity();
  std::vector<int64_t> budgets = sweep_budgets(bounds.recompute_all_peak_bytes, bounds.keep_all_peak_bytes, 3);
  for (size_t i = 0; i < budgets.size(); ++i) {
    INFO("budget " << budgets[i]);
    const CheckpointPlan plan = plan_budget(kSmall, o, budgets[i], Device{kCPU}, "--sweep", fixed_machine());
    StrategyResult r = run_plan(plan);
    CHECK(r.measured.peak_bytes == plan.predicted_peak_bytes);
    CHECK(r.fits());
    CHECK(r.recomputed_flops_per_step == plan.recompute_flops);
    CHECK(plan.predicted_overhead_seconds <= previous_cost);
    CHECK(r.recomputed_flops_per_step <= previous_flops);
    previous_cost = plan.predicted_overhead_seconds;
    previous_flops = r.recomputed_flops_per_step;
    if (i == 0) CHECK(r.recomputed_flops_per_step > 0);            // the lowest budget recomputes
    if (i + 1 == budgets.size()) CHECK(r.recomputed_flops_per_step == 0);  // the highest keeps all
  }
}

TEST_CASE("planning: at full checkpointing's own peak the plan fits and recomputes no more", "[planning]") {
  const StrategyResult full = run(strategy("full"));
  const CheckpointPlan plan =
      plan_budget(kSmall, TrainingOptions{}, full.measured.peak_bytes, Device{kCPU}, "--sweep", fixed_machine());
  StrategyResult r = run_plan(plan);
  CHECK(r.measured.peak_bytes <= full.measured.peak_bytes);
  CHECK(r.recomputed_flops_per_step <= full.recomputed_flops_per_step);
  CHECK(full.recomputed_flops_per_step > 0);
}

TEST_CASE("planning: a budget below the minimum is the planner's CheckpointError, with the flag and the minimum",
          "[planning]") {
  const CheckpointPlan bounds = plan_bounds(kSmall, TrainingOptions{}, Device{kCPU});
  const int64_t lo = bounds.recompute_all_peak_bytes;
  REQUIRE_THROWS_MATCHES(plan_budget(kSmall, TrainingOptions{}, lo - 1, Device{kCPU}), CheckpointError,
                         What(Contains("--budget " + byte_size_text(lo - 1) + ": ") &&
                              Contains("no plan fits a budget of " + std::to_string(lo - 1) + " bytes") &&
                              Contains("the minimum feasible peak is " + std::to_string(lo) + " bytes")));
  CHECK_NOTHROW(plan_budget(kSmall, TrainingOptions{}, lo, Device{kCPU}));
}

TEST_CASE("planning: with a host budget (--offload) the plan for a CUDA device may offload, is never dearer, and "
          "its dry run peaks at its prediction",
          "[planning]") {
  const TrainingOptions o;
  const Device cuda{kCUDA};  // planned by dry runs on Meta counting like CUDA: no device needed
  const int64_t host = int64_t{64} << 20;
  PlanningArgs link;  // priced at the datasheet's figure, so that a build without CUDA needs no device to measure
  link.host_link_bandwidth = kH200HostLinkBandwidth;
  // Both plans at `budget`; checks the offload plan against the plain one and its dry run against
  // its prediction, and returns the two.
  auto plan_both = [&](const ModelShape& shape, int64_t budget) {
    const CheckpointPlan plain = plan_budget(shape, o, budget, cuda, "--sweep");
    const CheckpointPlan with_offload = plan_budget(shape, o, budget, cuda, "--offload 64.0 MiB, --sweep", link, host);
    CHECK(plain.host_budget_bytes == 0);
    CHECK(plain.offloaded.empty());
    CHECK(with_offload.host_budget_bytes == host);
    CHECK(with_offload.predicted_peak_bytes <= budget);
    CHECK(with_offload.predicted_host_peak_bytes <= host);
    CHECK(with_offload.predicted_cost_seconds() <= plain.predicted_cost_seconds());
    CHECK(with_offload.offloaded.empty() == (with_offload.offloaded_bytes == 0));
    // Run as memory_vs_recompute runs it (its dry run, counting like CUDA): the plan's peaks, exactly.
    StrategyResult r;
    {
      MetaAccountingGuard accounting(kCUDA);
      record_predicted(run_training_steps(planned_strategy(with_offload, planned_name(budget, true)), shape,
                                          Device{kMeta}, 3),
                       1, 0, &r);
    }
    record_plan(with_offload, &r);
    CHECK(r.predicted.peak_reserved_bytes == with_offload.predicted_reserved_peak_bytes);
    CHECK(r.predicted.peak_bytes == with_offload.predicted_allocated_peak_bytes);
    CHECK(r.plan_host_budget_bytes == host);
    CHECK(r.plan_offloaded_calls == static_cast<int64_t>(with_offload.offloaded.size()));
    CHECK(r.plan_host_link_bandwidth == link.host_link_bandwidth);
    return std::make_pair(plain, with_offload);
  };
  const CheckpointPlan small = plan_bounds(kSmall, o, cuda);
  for (int64_t budget : sweep_budgets(small.recompute_all_peak_bytes, small.keep_all_peak_bytes, 3))
    plan_both(kSmall, budget);
  // Config A (the benchmark's default shape): at some budget of its sweep (the second of four, as
  // `--sweep 4 --offload 64MiB` shows), moving a tensor to host memory is cheaper than recomputing
  // it, and the plan does.
  const ModelShape config_a{8, 128, 256, 4, 65, 4};
  const CheckpointPlan a = plan_bounds(config_a, o, cuda);
  bool offloads = false;
  for (int64_t budget : sweep_budgets(a.recompute_all_peak_bytes, a.keep_all_peak_bytes, 4)) {
    const auto [plain, with_offload] = plan_both(config_a, budget);
    if (with_offload.offloaded.empty()) continue;
    offloads = true;
    CHECK(with_offload.predicted_host_peak_bytes > 0);
    CHECK(with_offload.predicted_cost_seconds() < plain.predicted_cost_seconds());
    break;
  }
  CHECK(offloads);
}
