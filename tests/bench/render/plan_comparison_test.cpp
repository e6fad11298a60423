// Tests bench/render/plan_comparison.cpp (no PyTorch counterpart): --compare with --sweep matches
// each sweep budget with the row of bench/torch_reference.py --plan that ran the plan exported for
// it, by budget bytes, read from the JSON torch_reference.py writes; a budget PyTorch did not run
// says "not run", and a PyTorch plan row at no sweep budget, or a budget run twice, is one note.
#include <catch2/catch.hpp>

#include "bench/render/render.h"
#include "remat.h"

using namespace remat;
using namespace remat::bench;

namespace {

// A sweep point as memory_vs_recompute records it: planned for `budget`, its dry run's activation
// bytes and peak, measured alike.
StrategyResult sweep_point(int64_t budget, int64_t activation_bytes, int64_t peak_bytes, double ms) {
  StrategyResult r;
  r.name = "plan@" + std::to_string(budget);
  r.budget_bytes = budget;
  r.plan_predicted_peak_bytes = peak_bytes;
  r.predicted.known = r.measured.known = true;
  r.predicted.activation_bytes = r.measured.activation_bytes = activation_bytes;
  r.median_ms = ms;
  return r;
}

// What torch_reference.py --plan DIR writes for plans of 1000 and 3000 bytes (a budget of no sweep
// point) and a second plan for 1000 bytes, beside a fixed strategy.
const char* kTorchJson = R"({"framework": "pytorch 2.15.0",
  "config": {"model": "gpt", "layers": 2, "embd": 16, "heads": 2, "seq": 8, "batch": 2, "vocab": 11, "device": "cpu",
             "dtype": "f32", "attention": "math", "steps": 1, "warmup": 0, "threads": 1, "clock": "wall"},
  "results": [
    {"strategy": "none", "reentrant": false, "activation_bytes": 900, "peak_bytes": 0, "step_ms": [4.0],
     "median_ms": 4.0, "final_loss": 2.4},
    {"strategy": "plan@1000", "reentrant": false, "activation_bytes": 520, "peak_bytes": 0, "step_ms": [3.0],
     "median_ms": 3.0, "final_loss": 2.4, "plan": "/tmp/plans/plan_1000.json", "budget_bytes": 1000,
     "predicted_activation_bytes": 500, "predicted_peak_bytes": 990},
    {"strategy": "plan@3000", "reentrant": false, "activation_bytes": 800, "peak_bytes": 0, "step_ms": [2.0],
     "median_ms": 2.0, "final_loss": 2.4, "plan": "/tmp/plans/plan_3000.json", "budget_bytes": 3000,
     "predicted_activation_bytes": 790, "predicted_peak_bytes": 2900},
    {"strategy": "plan@1000-again", "reentrant": false, "activation_bytes": 1, "peak_bytes": 0, "step_ms": [1.0],
     "median_ms": 1.0, "final_loss": 2.4, "budget_bytes": 1000, "predicted_activation_bytes": 1,
     "predicted_peak_bytes": 1}]})";

}  // namespace

TEST_CASE("plan comparison: a row per sweep budget beside PyTorch's run of its plan, matched by budget bytes",
          "[report]") {
  RunConfig theirs_cfg;
  std::vector<StrategyResult> theirs;
  from_json(kTorchJson, &theirs_cfg, &theirs);
  REQUIRE(theirs.size() == 4);
  CHECK(theirs[1].budget_bytes == 1000);
  CHECK(theirs[1].predicted.activation_bytes == 500);
  CHECK(theirs[1].predicted.peak_bytes == 990);

  const std::vector<StrategyResult> sweep = {sweep_point(1000, 500, 990, 6.0), sweep_point(2000, 700, 1900, 5.0)};
  const PlanMatches m = match_plans(sweep, theirs);
  REQUIRE(m.rows.size() == 2);
  CHECK(m.rows[0].ours == &sweep[0]);
  CHECK(m.rows[0].theirs == &theirs[1]);  // the first of the two rows for 1000 bytes
  CHECK(m.rows[1].ours == &sweep[1]);
  CHECK(m.rows[1].theirs == nullptr);
  CHECK(m.notes == std::vector<std::string>{
                       "PyTorch's rows plan@1000 and plan@1000-again both ran a plan for 1000 bytes: plan@1000 is "
                       "compared",
                       "PyTorch's row plan@3000 ran a plan for 3000 bytes, which is not a budget of this sweep: not "
                       "compared"});

  const Table t = plan_comparison_table(sweep, theirs);
  CHECK(t.header == std::vector<std::string>{"budget bytes", "remat predicted", "remat measured", "PyTorch measured",
                                             "PyTorch / predicted", "remat ms", "PyTorch ms", "plan's prediction"});
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0] == std::vector<std::string>{"1000", "500", "500", "520", "1.0400", "6.0", "3.0", "same"});
  CHECK(t.rows[1] == std::vector<std::string>{"2000", "700", "700", "not run", "-", "5.0", "-", "-"});
}

TEST_CASE("plan comparison: a plan PyTorch ran that predicted other bytes is marked as another plan", "[report]") {
  RunConfig theirs_cfg;
  std::vector<StrategyResult> theirs;
  from_json(kTorchJson, &theirs_cfg, &theirs);
  const std::vector<StrategyResult> sweep = {sweep_point(1000, 480, 990, 6.0), sweep_point(3000, 790, 2800, 5.0)};
  const Table t = plan_comparison_table(sweep, theirs);
  REQUIRE(t.rows.size() == 2);
  CHECK(t.rows[0].back() == "differs: 500");  // another activation prediction
  CHECK(t.rows[1].back() == "differs: 790");  // the same activation bytes, another peak
  CHECK(match_plans(sweep, theirs).notes.size() == 1);  // 3000 bytes is a sweep budget here: only the duplicate
  CHECK(match_plans({}, theirs).rows.empty());
}
