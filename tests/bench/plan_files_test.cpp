// Tests bench/plan_files.{h,cpp}: memory_vs_recompute's --export-plan and --plan. A plan exported
// with its row's activation bytes, loaded and applied to the same step, trains at the file's
// predicted peak and activation bytes to the byte (CPU); a plan for cuda made by a dry run is
// refused where the dry runs count like the CPU; --export-plan without --budget is an error;
// --sweep N --export-plan DIR: a folder, checked and cleared of an earlier sweep's plans.
#include "bench/plan_files.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include "tests/testing/matchers.h"

using namespace remat;
using namespace remat::bench;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
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
                                       "too (or --sweep N, and a folder for one plan per budget)")));
  args.sweep_at_strategies = true;
  REQUIRE_THROWS_MATCHES(check_plan_file_args(args), Error,
                         What(Contains("--export-plan plan.json with --sweep-at-strategies alone: it writes the plan of "
                                       "--budget SIZE (a file) or one plan per budget of --sweep N (a folder); give "
                                       "--budget or --sweep too")));
  args.budget_bytes = 1 << 20;
  CHECK_NOTHROW(check_plan_file_args(args));
}

TEST_CASE("plan files: --sweep N --export-plan DIR is a folder, made if missing, an earlier sweep's plans removed",
          "[planning]") {
  const std::string dir = temp_path("plan_files_sweep");
  ::mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/plan_123.json") << "an earlier sweep's plan";
  std::ofstream(dir + "/plan_x.json") << "not a name the sweep writes";
  PlanningArgs args;
  args.sweep = 2;
  args.export_plan = dir;
  check_plan_file_args(args);
  struct stat st {};
  CHECK(::stat((dir + "/plan_123.json").c_str(), &st) != 0);
  CHECK(::stat((dir + "/plan_x.json").c_str(), &st) == 0);
  CHECK(sweep_plan_path(dir, 124744) == dir + "/plan_124744.json");

  args.export_plan = dir + "/made";
  check_plan_file_args(args);
  CHECK((::stat(args.export_plan.c_str(), &st) == 0 && S_ISDIR(st.st_mode)));

  args.export_plan = dir + "/plan_x.json";
  REQUIRE_THROWS_MATCHES(check_plan_file_args(args), UsageError,
                         What(Equals("--export-plan (a folder with --sweep): '" + dir + "/plan_x.json' is not a folder")));
  args.export_plan = dir + "/no/such";
  REQUIRE_THROWS_MATCHES(check_plan_file_args(args), UsageError,
                         What(Equals("--export-plan (a folder with --sweep): cannot create the folder '" + dir +
                                     "/no/such': No such file or directory")));
  args.export_plan = dir;
  args.budget_bytes = 1 << 20;
  REQUIRE_THROWS_MATCHES(check_plan_file_args(args), Error,
                         What(Equals("--export-plan " + dir + " with --sweep 2 is a folder for the sweep's plans; "
                                     "--budget 1.0 MiB's plan is one file: export it in a run without --sweep")));
}

TEST_CASE("plan files: --sweep N --plan DIR runs each sweep budget under the file exported for it", "[planning]") {
  const TrainingOptions o;
  const CheckpointPlan bounds = plan_bounds(kSmall, o, Device{kCPU}, fixed_machine());
  const int64_t budget = bounds.keep_all_peak_bytes;
  const CheckpointPlan plan = plan_budget(kSmall, o, budget, Device{kCPU}, "--sweep", fixed_machine());
  const std::string dir = temp_path("plan_files_sweep_plans");
  ::mkdir(dir.c_str(), 0755);
  export_plan(plan, run(plan, "plan", /*measure=*/false), sweep_plan_path(dir, budget));

  PlanningArgs args = fixed_machine();
  args.sweep = 1;
  args.plan_file = dir;
  CHECK_NOTHROW(check_plan_file_args(args));
  CHECK_NOTHROW(check_sweep_plan_files(args, {budget}));
  const CheckpointPlan loaded = sweep_plan(kSmall, o, budget, Device{kCPU}, args, "cpu");
  CHECK(loaded.budget_bytes == budget);
  CHECK(loaded.kept == plan.kept);
  CHECK(loaded.predicted_peak_bytes == plan.predicted_peak_bytes);

  const std::string missing = sweep_plan_path(dir, 5);
  REQUIRE_THROWS_MATCHES(check_sweep_plan_files(args, {budget, 5}), CheckpointError,
                         What(Equals("--plan " + dir + ": no plan for the sweep's budget of 5 bytes (" + missing +
                                     "); write them with --sweep 1 --export-plan " + dir + " and the same flags")));
  std::ofstream(sweep_plan_path(dir, budget + 1)) << std::ifstream(sweep_plan_path(dir, budget)).rdbuf();
  REQUIRE_THROWS_MATCHES(sweep_plan(kSmall, o, budget + 1, Device{kCPU}, args, "cpu"), CheckpointError,
                         What(Equals("--plan " + sweep_plan_path(dir, budget + 1) + ": the plan is for a budget of " +
                                     std::to_string(budget) + " bytes, not the sweep's " +
                                     std::to_string(budget + 1))));

  args.export_plan = dir;
  REQUIRE_THROWS_MATCHES(check_plan_file_args(args), Error,
                         What(Contains("--plan " + dir + " with --sweep 1 runs the plans an earlier --export-plan wrote "
                                       "there; not with --export-plan " + dir + " too")));
  args.export_plan.clear();
  args.sweep_at_strategies = true;
  REQUIRE_THROWS_MATCHES(check_plan_file_args(args), Error,
                         What(Contains("--plan " + dir + " with --sweep 1 runs the plans of the sweep's budgets; not "
                                       "with --sweep-at-strategies (the strategies' measured peaks differ run to run)")));
  args.sweep_at_strategies = false;
  args.plan_file = missing;
  REQUIRE_THROWS_MATCHES(check_plan_file_args(args), UsageError,
                         What(Equals("--plan " + missing + " with --sweep 1: expected the folder that --sweep N "
                                     "--export-plan DIR writes, but it is not a folder")));
}

TEST_CASE("plan files: a bf16 Llama's plan says bf16 and names its rotary calls' complex64 outputs", "[planning]") {
  // Its blocks open with RMSNorm's upcast to f32 (PyTorch 2.15's CPU composite): the file's dtype is
  // its matrix products' (python/remat_plan refuses a plan of another dtype than the twin's run).
  ModelShape llama{2, 8, 32, 4, 11, 1};
  llama.model = "llama";
  llama.kv_heads = 2;
  TrainingOptions o;
  o.dtype = kBFloat16;
  o.attention = SDPBackend::FLASH_ATTENTION;
  const CheckpointPlan bounds = plan_bounds(llama, o, Device{kCPU}, fixed_machine());
  const CheckpointPlan plan = plan_budget(llama, o, bounds.keep_all_peak_bytes, Device{kCPU}, "--budget",
                                          fixed_machine());
  const nlohmann::json j = nlohmann::json::parse(plan.to_json());
  CHECK(j["dtype"] == "bf16");
  const nlohmann::json& calls = j["regions"][0]["calls"];
  CHECK(calls[0]["op"] == "aten::_to_copy");
  CHECK(calls[0]["outputs"][0]["dtype"] == "f32");
  int complex_outputs = 0;
  for (const auto& c : calls)
    for (const auto& out : c["outputs"]) complex_outputs += out["dtype"] == "complex64";
  CHECK(complex_outputs == 8);  // per rotary: view_as_complex, slice, view, mul; for q and k
  CHECK(CheckpointPlan::from_json(plan.to_json()).to_json() == plan.to_json());
}
