// Tests bench/plan_files.{h,cpp}: memory_vs_recompute's --export-plan and --plan. A plan exported
// with its row's activation bytes, loaded and applied to the same step, trains at the file's
// predicted peak and activation bytes to the byte (CPU); a plan for cuda made by a dry run is
// refused where the dry runs count like the CPU; --export-plan without --budget is an error.
#include "bench/plan_files.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>

#include "tests/testing/matchers.h"

using namespace remat;
using namespace remat::bench;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using remat::testing::What;

namespace {

const ModelShape kSmall{2, 32, 32, 2, 17, 2};

PlanningArgs fixed_machine() {
  PlanningArgs m;
  m.peak_flops = 4.9e11;  // a fixed cost model: the same plan on every machine
  m.bandwidth = 1.2e10;
  return m;
}

// A strategy as memory_vs_recompute runs it: a dry run on Meta counting like `accounting`, then
// (on the CPU) the same steps for real.
StrategyResult run(const CheckpointPlan& plan, const std::string& name, bool measure) {
  StrategyResult r;
  r.name = name;
  record_predicted(run_training_steps(planned_strategy(plan, name), kSmall, Device{kMeta}, 3), 1, 0, &r);
  if (measure) record_measured(run_training_steps(planned_strategy(plan, name), kSmall, Device{kCPU}, 3), 1, &r);
  record_plan(plan, &r);
  return r;
}

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

}  // namespace

TEST_CASE("plan files: exported, loaded and trained under, at the file's predicted peak and activations",
          "[planning]") {
  const TrainingOptions o;
  const CheckpointPlan bounds = plan_bounds(kSmall, o, Device{kCPU}, fixed_machine());
  const int64_t budget = (bounds.recompute_all_peak_bytes + bounds.keep_all_peak_bytes) / 2;
  const CheckpointPlan plan = plan_budget(kSmall, o, budget, Device{kCPU}, "--budget", fixed_machine());
  const StrategyResult planned = run(plan, "planned", /*measure=*/true);
  const std::string path = temp_path("plan_files_test.json");
  export_plan(plan, planned, path);

  const PlanFile p = load_plan_file(path, kSmall, o, "cpu");
  CHECK(p.file.budget_bytes == budget);
  CHECK(p.file.predicted_peak_bytes == plan.predicted_peak_bytes);
  CHECK(p.file.predicted_activation_bytes == planned.predicted.activation_bytes);
  CHECK(p.applied.predicted_peak_bytes == plan.predicted_peak_bytes);
  CHECK(p.applied.kept == plan.kept);
  const StrategyResult r = run(p.applied, "plan-file", /*measure=*/true);
  CHECK(r.measured_plan_peak() == p.file.predicted_peak_bytes);
  CHECK(r.measured.activation_bytes == p.file.predicted_activation_bytes);
  CHECK(r.measured_plan_peak() == planned.measured_plan_peak());
  CHECK(r.final_loss == planned.final_loss);
  CHECK(plan_file_line(path, p, r) ==
        "--plan " + path + ": budget " + std::to_string(budget) + " bytes of allocated memory; predicted peak " +
            std::to_string(plan.predicted_peak_bytes) + " bytes (this step's dry run under the plan: " +
            std::to_string(plan.predicted_peak_bytes) + "), activations " +
            std::to_string(planned.predicted.activation_bytes) + " bytes (" +
            std::to_string(planned.predicted.activation_bytes) + "); measured peak " +
            std::to_string(plan.predicted_peak_bytes) + " bytes, activations " +
            std::to_string(planned.predicted.activation_bytes) + " bytes");
  ModelShape deeper = kSmall;
  deeper.layers = 3;
  REQUIRE_THROWS_MATCHES(load_plan_file(path, deeper, o, "cpu"), CheckpointError,
                         What(StartsWith("--plan " + path + ": CheckpointPlan::applied_to: the plan does not match "
                                         "the step: the plan has 2 regions, the step's region 3 is 'layers.2'")));
  std::remove(path.c_str());
}

TEST_CASE("plan files: a plan for cuda from a dry run, and the flags' errors", "[planning]") {
  const TrainingOptions o;
  const CheckpointPlan bounds = plan_bounds(kSmall, o, Device{kCUDA}, fixed_machine());
  const CheckpointPlan plan =
      plan_budget(kSmall, o, bounds.keep_all_peak_bytes, Device{kCUDA}, "--budget", fixed_machine());
  const std::string path = temp_path("plan_files_test_cuda.json");
  StrategyResult predicted;
  {
    MetaAccountingGuard cuda(kCUDA);
    predicted = run(plan, "planned", /*measure=*/false);
  }
  export_plan(plan, predicted, path);
  const CheckpointPlan file = CheckpointPlan::load(path);
  CHECK(file.device() == Device{kCUDA});
  CHECK(file.counter == MemoryCounter::Reserved);
  CHECK(file.predicted_peak_bytes == plan.predicted_reserved_peak_bytes);
  REQUIRE_THROWS_MATCHES(load_plan_file(path, kSmall, o, "cpu"), CheckpointError,
                         What(StartsWith("--plan " + path + ": the plan was made for cuda, but this run's dry runs "
                                         "count like cpu (--device cuda, or --meta-accounting cuda with --dry-run)")));
  CHECK(load_plan_file(path, kSmall, o, "cuda").applied.predicted_peak_bytes == plan.predicted_peak_bytes);
  std::remove(path.c_str());

  PlanningArgs args;
  args.export_plan = "plan.json";
  REQUIRE_THROWS_MATCHES(check_plan_file_args(args), Error,
                         What(Contains("--export-plan plan.json writes the plan made for --budget SIZE: give --budget "
                                       "too")));
  args.budget_bytes = 1 << 20;
  CHECK_NOTHROW(check_plan_file_args(args));
}
