// Tests checkpoint/plan_file_apply.cpp: CheckpointPlan::applied_to checks a plan (one read from a
// file) against a step's own profile, region by region and call by call, and names the region and
// the first call that differs: another model size, another depth, a renamed region, a region with
// a call missing or a call too many.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "remat.h"
#include "tests/testing/matchers.h"
#include "tests/testing/plan_files.h"
#include "tests/testing/planned_steps.h"

using namespace remat;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using remat::testing::What;
using Json = nlohmann::ordered_json;

namespace {

const remat::testing::GptShape kShape{2, 16, 32, 2, 17, 2};

CheckpointPlan keep_all(const remat::testing::GptShape& s) {
  PlannerOptions o{int64_t{1} << 40};
  o.peak_flops = 4.9e11;
  o.bandwidth = 1.2e10;
  return plan_checkpointing(remat::testing::planned_gpt_step(s), o);
}

// kShape's plan as a file, edited.
CheckpointPlan edited(const std::function<void(Json&)>& change) {
  Json j = Json::parse(keep_all(kShape).to_json());
  change(j);
  remat::testing::refingerprint(&j);
  return CheckpointPlan::from_json(j.dump());
}

CheckpointPlan apply(const CheckpointPlan& plan, const remat::testing::GptShape& s) {
  return plan.applied_to(remat::testing::planned_gpt_step(s));
}

const char* kPrefix = "CheckpointPlan::applied_to: the plan does not match the step: ";

}  // namespace

TEST_CASE("plan file: applied_to names the region and the first call that differs", "[plan_file]") {
  const CheckpointPlan plan = CheckpointPlan::from_json(keep_all(kShape).to_json());
  remat::testing::GptShape wider = kShape;
  wider.embd = 64;
  REQUIRE_THROWS_MATCHES(apply(plan, wider), CheckpointError,
                         What(StartsWith(std::string(kPrefix) +
                                         "region 'layers.0', call 1: the plan has aten::native_layer_norm #0 -> "
                                         "f32[2x16x32],") &&
                              Contains("the step runs aten::native_layer_norm #0 -> f32[2x16x64],") &&
                              Contains("(plan again for this model and configuration)")));
  remat::testing::GptShape deeper = kShape;
  deeper.layers = 3;
  REQUIRE_THROWS_MATCHES(apply(plan, deeper), CheckpointError,
                         What(StartsWith(std::string(kPrefix) + "the plan has 2 regions, the step's region 3 is "
                                                                "'layers.2'")));
  remat::testing::GptShape shallower = kShape;
  shallower.layers = 1;
  REQUIRE_THROWS_MATCHES(apply(plan, shallower), CheckpointError,
                         What(StartsWith(std::string(kPrefix) + "the step runs 1 regions ('layers.0'), the plan's "
                                                                "region 2 is 'layers.1'")));
  REQUIRE_THROWS_MATCHES(apply(edited([](Json& j) { j["regions"][1]["name"] = "blocks.1"; }), kShape), CheckpointError,
                         What(StartsWith(std::string(kPrefix) + "region 2 is 'blocks.1' in the plan, 'layers.1' in "
                                                                "the step")));
}

TEST_CASE("plan file: applied_to names a call missing from the plan's region, or one too many", "[plan_file]") {
  Json j = Json::parse(keep_all(kShape).to_json());
  const size_t n = j["regions"][0]["calls"].size();
  const Json last = j["regions"][0]["calls"][n - 1];
  const std::string shown = last["op"].get<std::string>() + " #" + std::to_string(last["index"].get<int64_t>()) + " -> ";
  REQUIRE_THROWS_MATCHES(apply(edited([&](Json& p) { p["regions"][0]["calls"].erase(n - 1); }), kShape),
                         CheckpointError,
                         What(StartsWith(std::string(kPrefix) + "region 'layers.0', call " + std::to_string(n) +
                                         ": the step runs " + shown) &&
                              Contains(", the plan's region ends after " + std::to_string(n - 1) + " calls")));
  Json extra = last;
  extra["index"] = last["index"].get<int64_t>() + 1;
  const std::string extra_shown =
      last["op"].get<std::string>() + " #" + std::to_string(extra["index"].get<int64_t>()) + " -> ";
  REQUIRE_THROWS_MATCHES(apply(edited([&](Json& p) { p["regions"][0]["calls"].push_back(extra); }), kShape),
                         CheckpointError,
                         What(StartsWith(std::string(kPrefix) + "region 'layers.0', call " + std::to_string(n + 1) +
                                         ": the plan has " + extra_shown) &&
                              Contains(", the step's region ends after " + std::to_string(n) + " calls")));
}
