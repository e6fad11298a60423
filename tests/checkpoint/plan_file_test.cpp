// Tests checkpoint/plan_file.{h,cpp} and CheckpointPlan::from_json / load (checkpoint/
// plan_file_read.cpp): a plan written as a file and read back gives the same decisions, call by
// call, and the step under it measures the same peak on the CPU; the file's fields are those of
// docs/plan_format.md; the fingerprint is the documented FNV-1a of the documented text.
#include <catch2/catch.hpp>

#include <limits>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "checkpoint/plan_file.h"
#include "remat.h"
#include "tests/testing/matchers.h"
#include "tests/testing/plan_files.h"
#include "tests/testing/planned_steps.h"

using namespace remat;
using Catch::Matchers::Contains;
using remat::testing::What;
using Json = nlohmann::json;

namespace {

const remat::testing::GptShape kShape{2, 16, 32, 2, 17, 2};

PlannerOptions fixed_machine(int64_t budget_bytes) {
  PlannerOptions o{budget_bytes};
  o.peak_flops = 4.9e11;  // a fixed cost model: the same plan on every machine
  o.bandwidth = 1.2e10;
  return o;
}

// A plan between the feasible bounds: it keeps some outputs and recomputes others.
const CheckpointPlan& middle_plan() {
  static const CheckpointPlan plan = [] {
    const PlannedStep step = remat::testing::planned_gpt_step(kShape);
    const CheckpointPlan bounds = plan_checkpointing(step, fixed_machine(int64_t{1} << 40));
    return plan_checkpointing(step, fixed_machine((bounds.recompute_all_peak_bytes + bounds.keep_all_peak_bytes) / 2));
  }();
  return plan;
}

using Decision = std::tuple<std::string, std::string, int64_t, CheckpointPolicy>;

// The step on the CPU under `policy`, every decision it made recorded.
remat::testing::StepResult run_recorded(const PolicyFn& policy, std::vector<Decision>* decisions) {
  PolicyFn recording = [&](const SelectiveCheckpointContext& ctx, const OperatorHandle& op,
                           const std::vector<IValue>& args) {
    const CheckpointPolicy p = policy(ctx, op, args);
    decisions->emplace_back(ctx.scope, op.name(), ctx.index, p);
    return p;
  };
  return remat::testing::gpt_train_step(kShape, Device{kCPU}, nn::ActivationCheckpointing::selective(recording));
}

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

}  // namespace

TEST_CASE("plan file: the documented fingerprint example", "[plan_file]") {
  CHECK(fnv1a64("") == 0xcbf29ce484222325ULL);
  CHECK(plan_fingerprint("a") == "fnv1a64:af63dc4c8601ec8c");
  // docs/plan_format.md's worked example.
  CHECK(plan_fingerprint("aten::mm(f32[1024x768]);aten::gelu(f32[8x128x3072]);") == "fnv1a64:a05c52b51ffe2e27");
  CHECK(std::string(plan_dtype_name(kBFloat16)) == "bf16");
  CHECK(std::string(plan_dtype_name(kLong)) == "i64");
}

TEST_CASE("plan file: the fields of docs/plan_format.md, regions named as PyTorch names the blocks", "[plan_file]") {
  const CheckpointPlan& plan = middle_plan();
  const Json j = Json::parse(plan.to_json());
  CHECK(j["format"] == "remat-plan");
  CHECK(j["version"] == 1);
  CHECK(j["budget_bytes"] == plan.budget_bytes);
  CHECK(j["counter"] == "allocated");
  CHECK(j["device"] == "cpu");
  CHECK(j["dtype"] == "f32");
  CHECK(j["predicted"]["peak_bytes"] == plan.predicted_peak_bytes);
  CHECK(j["predicted"]["host_peak_bytes"] == 0);
  REQUIRE(j["regions"].size() == 2);
  CHECK(j["regions"][0]["name"] == "layers.0");
  CHECK(j["regions"][1]["name"] == "layers.1");
  int64_t saved = 0;
  for (const Json& r : j["regions"]) {
    std::map<std::string, int64_t> per_op;
    for (const Json& c : r["calls"]) {
      CHECK(c["index"] == per_op[c["op"].get<std::string>()]++);
      saved += c["decision"] == "save";
    }
    const std::string text = remat::testing::canonical_text(r);
    CHECK(r["fingerprint"] == plan_fingerprint(text));
  }
  CHECK(saved == static_cast<int64_t>(plan.kept.size()) / 1);  // one step: each kept call once
  CHECK(saved > 0);
  CHECK(j["regions"][0]["calls"][0]["op"].get<std::string>().rfind("aten::", 0) == 0);
}

TEST_CASE("plan file: saved and loaded, the same decisions call by call and the same measured peak",
          "[plan_file]") {
  const CheckpointPlan& plan = middle_plan();
  const std::string path = temp_path("plan_file_test.json");
  plan.save(path);
  const CheckpointPlan loaded = CheckpointPlan::load(path);
  CHECK(loaded.to_json() == plan.to_json());
  CHECK(CheckpointPlan::from_json(plan.to_json()).to_json() == plan.to_json());
  CHECK(loaded.predicted_peak_bytes == plan.predicted_peak_bytes);
  CHECK(loaded.budget_bytes == plan.budget_bytes);
  CHECK(loaded.kept == plan.kept);

  std::vector<Decision> original, reread;
  const remat::testing::StepResult a = run_recorded(plan.policy(), &original);
  const remat::testing::StepResult b = run_recorded(loaded.policy(), &reread);
  REQUIRE_FALSE(original.empty());
  CHECK(reread == original);
  CHECK(a.peak == plan.predicted_peak_bytes);
  CHECK(b.peak == a.peak);
  CHECK(remat::testing::bitwise_equal(a.loss_and_grads, b.loss_and_grads));
  std::remove(path.c_str());
}

TEST_CASE("plan file: applied to the step, a loaded plan predicts the same peak by its own dry run", "[plan_file]") {
  const CheckpointPlan& plan = middle_plan();
  const CheckpointPlan loaded = CheckpointPlan::from_json(plan.to_json());
  REQUIRE_THROWS_MATCHES(loaded.with_kept(remat::testing::planned_gpt_step(kShape), {}), CheckpointError,
                         What(Contains("CheckpointPlan::with_kept: a plan read from a file knows no candidates")));
  const CheckpointPlan applied = loaded.applied_to(remat::testing::planned_gpt_step(kShape));
  CHECK(applied.predicted_peak_bytes == plan.predicted_peak_bytes);
  CHECK(applied.recompute_flops == plan.recompute_flops);
  CHECK(applied.kept == plan.kept);
  CHECK(applied.to_json() == plan.to_json());
  std::vector<Decision> original, again;
  run_recorded(plan.policy(), &original);
  run_recorded(applied.policy(), &again);
  CHECK(again == original);
}

TEST_CASE("plan file: an empty plan and an unwritable path are refused", "[plan_file]") {
  REQUIRE_THROWS_MATCHES(CheckpointPlan().to_json(), CheckpointError,
                         What(Contains("CheckpointPlan::to_json: an empty plan (make one with plan_checkpointing)")));
  REQUIRE_THROWS_MATCHES(middle_plan().save("/nonexistent-dir/plan.json"), CheckpointError,
                         What(Contains("CheckpointPlan::save: cannot write '/nonexistent-dir/plan.json': No such file or "
                                       "directory")));
  REQUIRE_THROWS_MATCHES(middle_plan().save("/dev/full"), CheckpointError,
                         What(Contains("CheckpointPlan::save: cannot write '/dev/full': No space left on device")));
  CheckpointPlan not_finite = middle_plan();
  not_finite.predicted_overhead_seconds = std::numeric_limits<double>::infinity();
  REQUIRE_THROWS_MATCHES(not_finite.to_json(), CheckpointError,
                         What(Contains("CheckpointPlan::to_json: predicted.overhead_seconds is inf, which JSON cannot "
                                       "hold; no file is written (it could not be read back)")));
  REQUIRE_THROWS_MATCHES(CheckpointPlan::load("/nonexistent-dir/plan.json"), CheckpointError,
                         What(Contains("CheckpointPlan::load: cannot read '/nonexistent-dir/plan.json': No such file or directory")));
  REQUIRE_THROWS_MATCHES(CheckpointPlan().device(), Error,
                         What(Contains("CheckpointPlan::device: an empty plan (make one with plan_checkpointing)")));
  CHECK(middle_plan().device() == Device{kCPU});
  REQUIRE_THROWS_MATCHES(CheckpointPlan().applied_to(remat::testing::planned_gpt_step(kShape)), CheckpointError,
                         What(Contains("CheckpointPlan::applied_to: an empty plan")));
}
