// Tests checkpoint/planner_profile.{h,cpp}: a region's scope is what its calls' scopes share, cut on
// whole names, and a later dry run that runs more (or other) regions than the profiling run is
// refused with a CheckpointError that says the step changed, never an out-of-range index.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "checkpoint/plan_data.h"
#include "checkpoint/planner_profile.h"
#include "remat.h"
#include "tests/testing/matchers.h"
#include "tests/testing/planned_steps.h"

using namespace remat;
using Catch::Matchers::Contains;
using remat::planner_detail::common_scope;
using remat::testing::What;

namespace {

PlannedStep scoped_step(const std::vector<std::string>& scopes) {
  return [scopes](const PolicyFn& policy, Device device) { remat::testing::scoped_regions(scopes, policy, device); };
}

std::vector<std::string> summary_regions(const CheckpointPlan& plan) {
  std::vector<std::string> names;
  for (const remat::testing::SummaryRow& row : remat::testing::summary_rows(plan)) names.push_back(row.name);
  return names;
}

}  // namespace

TEST_CASE("planner profile: common_scope cuts on whole names", "[planner]") {
  struct Case {
    const char *a, *b, *shared;
  };
  const Case cases[] = {
      {"layers.1.mlp", "layers.1.attn", "layers.1"}, {"layers.1.mlp.fc1", "layers.1.mlp.fc2", "layers.1.mlp"},
      {"layers.1", "layers.1.mlp", "layers.1"},      {"layers.1.mlp", "layers.1", "layers.1"},
      {"layers.1", "layers.1", "layers.1"},          {"layers.10", "layers.1", "layers"},
      {"layers.1", "layers.10", "layers"},           {"layers.10.mlp", "layers.1.mlp", "layers"},
      {"layers.1", "layers.10.mlp", "layers"},       {"h.0", "head", ""},
      {"head", "h.0", ""},                           {"", "layers.1", ""},
      {"layers.1", "", ""},
  };
  for (const Case& c : cases) {
    INFO("'" << c.a << "' and '" << c.b << "'");
    CHECK(common_scope(c.a, c.b) == c.shared);
  }
}

TEST_CASE("planner profile: a region's scope in the summary is a whole-name prefix of its calls' scopes",
          "[planner]") {
  const PlannerOptions all{int64_t{1} << 40};
  CHECK(summary_regions(plan_checkpointing(scoped_step({"layers.10", "layers.1"}), all)) ==
        std::vector<std::string>{"layers"});
  CHECK(summary_regions(plan_checkpointing(scoped_step({"layers.1", "layers.10"}), all)) ==
        std::vector<std::string>{"layers"});
  CHECK(summary_regions(plan_checkpointing(scoped_step({"layers.1.attn", "layers.1.mlp"}), all)) ==
        std::vector<std::string>{"layers.1"});
}

TEST_CASE("planner profile: a later dry run with more regions than the profile is a CheckpointError",
          "[planner][errors]") {
  // From the second dry run (keep-all) on, one region more, after the profile's or before it.
  for (const bool before : {false, true}) {
    int calls = 0;
    PlannedStep growing = [&](const PolicyFn& policy, Device device) {
      ++calls;
      if (calls > 1 && before) remat::testing::scoped_regions({"extra"}, policy, device);
      remat::testing::scoped_regions({"block"}, policy, device, calls > 1 && !before ? 1 : 0);
    };
    INFO("the extra region " << (before ? "before" : "after") << " the profile's");
    REQUIRE_THROWS_MATCHES(plan_checkpointing(growing, PlannerOptions{int64_t{1} << 40}), CheckpointError,
                           What(Contains("dry run 2 (keep-all): the step is not the same step as in the profiling "
                                         "run") &&
                                Contains(before ? "call 1 is 'extra / aten::mm / #0' in region 1"
                                                : "call 3 is 'block / aten::mm / #0' in region 2") &&
                                Contains("each call must run the same model on the same shapes")));
  }
  // with_kept's dry run too.
  const CheckpointPlan plan = plan_checkpointing(scoped_step({"block"}), PlannerOptions{int64_t{1} << 40});
  PlannedStep more = [](const PolicyFn& policy, Device device) { remat::testing::scoped_regions({"block"}, policy, device, 2); };
  REQUIRE_THROWS_MATCHES(plan.with_kept(more, {}), CheckpointError,
                         What(Contains("CheckpointPlan::with_kept: dry run 1") &&
                              Contains("in region 2 with arguments of shapes [8, 8] [8, 8], where the profiling run "
                                       "made only 2 op calls")));
}

TEST_CASE("planner profile: a copy names the call of its region whose output it copies, through views",
          "[planner]") {
  PlannedStep step = [](const PolicyFn& policy, Device device) {
    const TensorOptions o = TensorOptions().device(device);
    Tensor w = empty({8, 8}, o).requires_grad_();
    CheckpointOptions c;
    c.context_fn = [policy] { return create_selective_checkpoint_contexts(policy); };
    auto first = [w](const Tensor& in) {
      scope named("first");
      return mm(in, w);
    };
    auto second = [w](const Tensor& in) {
      scope named("second");
      Tensor a = clone(in);                       // of the first region's output
      Tensor b = mm(a, w);
      Tensor t = contiguous(transpose(b, 0, 1));  // of a view of b (aten::clone, as in PyTorch)
      Tensor u = clone(t);                        // of a copy of b
      return mm(sin(b), u);                       // sin: no copy
    };
    Tensor h = checkpoint(first, empty({8, 8}, o), c);
    mean(checkpoint(second, h, c)).backward();
  };
  const CheckpointPlan plan = plan_checkpointing(step, PlannerOptions{int64_t{1} << 40});
  const planner_detail::Data& d = *plan.data;
  auto copy_of = [&](const std::string& key) {
    INFO(key);
    REQUIRE(d.by_key.count(key) == 1);
    return d.calls[d.by_key.at(key)].copy_of;
  };
  const int64_t b = static_cast<int64_t>(d.by_key.at("second / aten::mm / #0"));
  const int64_t t = static_cast<int64_t>(d.by_key.at("second / aten::clone / #1"));
  CHECK(copy_of("second / aten::clone / #0") == -1);  // a rerun of `second` never recomputes `first`'s mm
  CHECK(copy_of("second / aten::clone / #1") == b);
  CHECK(copy_of("second / aten::clone / #2") == t);
  CHECK(copy_of("second / aten::sin / #0") == -1);
  CHECK(copy_of("second / aten::mm / #0") == -1);
  CHECK(copy_of("first / aten::mm / #0") == -1);
}
