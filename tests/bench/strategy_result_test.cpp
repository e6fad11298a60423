// Tests bench/strategy_result.{h,cpp}: measured and predicted figures are taken the same way from
// the steps after warm-up.
#include "bench/strategy_result.h"

#include <catch2/catch.hpp>

using namespace remat;
using namespace remat::bench;

namespace {
StepRecord step(int64_t peak, int64_t activations, double seconds, double loss) {
  StepRecord s;
  s.peak_bytes = peak;
  s.activation_bytes = activations;
  s.seconds = seconds;
  s.loss = loss;
  s.at_peak = {{MemoryCategory::Parameter, peak}};
  s.checkpoint.total.flops_recomputed = 10;
  s.checkpoint.total.ops_replayed = 4;
  s.timeline = {MemoryEvent{peak, peak, "", "", MemoryCategory::Parameter, "forward", false}};
  return s;
}
}  // namespace

TEST_CASE("strategy result: the steps after warm-up give the figures, warm-up left out", "[report]") {
  // The warm-up step has the highest peak (AdamW's state is created there): left out.
  std::vector<StepRecord> steps = {step(900, 90, 9.0, 3.0), step(500, 50, 0.3, 2.5), step(600, 40, 0.1, 2.4),
                                   step(550, 60, 0.2, 2.3)};
  StrategyResult r;
  record_measured(steps, 1, &r);
  CHECK(r.measured.known);
  CHECK(r.measured.peak_bytes == 600);
  CHECK(r.measured.at_peak.at(MemoryCategory::Parameter) == 600);  // the highest step's breakdown
  CHECK(r.measured.activation_bytes == 60);
  CHECK(r.step_ms == std::vector<double>{300, 100, 200});
  CHECK(r.median_ms == 200);
  CHECK(r.final_loss == 2.3);
  CHECK(r.recomputed_flops_per_step == 10);
  CHECK(r.replayed_per_step == 4);
  CHECK(r.measured.timeline.step == 3);  // the last step
  CHECK(r.measured.timeline.events.size() == 1);

  record_predicted(steps, 1, 1.5, &r);
  CHECK(r.predicted.known);
  CHECK(r.predicted.peak_bytes == r.measured.peak_bytes);
  CHECK(r.predicted.activation_bytes == r.measured.activation_bytes);
  CHECK(r.dry_run_seconds == 1.5);
  CHECK(r.predicted.timeline.step == 3);
}

TEST_CASE("strategy result: a warm-up that leaves no step is an error naming the counts", "[report]") {
  std::vector<StepRecord> steps = {step(1, 1, 1, 1), step(1, 1, 1, 1)};
  StrategyResult r;
  REQUIRE_THROWS_WITH(record_measured(steps, 2, &r), Catch::Contains("2 steps leave none after a warm-up of 2"));
}

TEST_CASE("strategy result: the median of step times is the upper middle one", "[report]") {
  CHECK(median_of({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median_of({4.0, 1.0, 3.0, 2.0}) == 3.0);
  CHECK(median_of({5.0}) == 5.0);
  REQUIRE_THROWS_WITH(median_of({}), Catch::Contains("median_of: no values"));
}

TEST_CASE("StrategyResult::fits: a plan of reserved bytes is judged by the measured reserved peak", "[bench]") {
  StrategyResult r;
  r.budget_bytes = 15;
  r.plan_predicted_peak_bytes = 14;
  CHECK(r.fits());  // nothing measured: the plan's prediction
  r.measured.known = true;
  r.measured.peak_bytes = 10;           // allocated
  r.measured.peak_reserved_bytes = 20;  // reserved: over the budget
  r.plan_counter = "reserved";
  CHECK(r.measured_plan_peak() == 20);
  CHECK_FALSE(r.fits());
  r.plan_counter = "allocated";
  CHECK(r.measured_plan_peak() == 10);
  CHECK(r.fits());
}
