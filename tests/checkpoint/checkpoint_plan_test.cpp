// Tests checkpoint/checkpoint_plan.cpp: CheckpointPlan's summary, whose rows count every call once,
// so that their kept calls add up to the count its first line gives.
#include <catch2/catch.hpp>

#include <vector>

#include "remat.h"
#include "tests/testing/planned_steps.h"

using namespace remat;
using remat::testing::summary_rows;
using remat::testing::SummaryRow;

namespace {

// The rows' kept calls, summed; `header` gets the first line's count.
int64_t rows_kept(const CheckpointPlan& plan, int64_t* header) {
  int64_t sum = 0;
  for (const SummaryRow& row : summary_rows(plan, header)) sum += row.kept;
  return sum;
}

}  // namespace

TEST_CASE("CheckpointPlan::summary: the rows' kept calls add up to the header's, replayed ones too",
          "[planner]") {
  const remat::testing::GptShape shape{4, 64, 32, 2, 17, 2};
  PlannedStep step = remat::testing::planned_gpt_step(shape);
  const CheckpointPlan plan = plan_checkpointing(step, PlannerOptions{int64_t{1} << 40});
  REQUIRE_FALSE(plan.replay_candidates.empty());
  std::vector<std::string> everything = plan.candidates;
  everything.insert(everything.end(), plan.replay_candidates.begin(), plan.replay_candidates.end());
  const CheckpointPlan all = plan.with_kept(step, everything);
  int64_t header = -1;
  CHECK(rows_kept(all, &header) == static_cast<int64_t>(everything.size()));
  CHECK(header == static_cast<int64_t>(everything.size()));
  for (const SummaryRow& row : summary_rows(all)) CHECK(row.dropped == 0);
  // Only replay candidates kept: every needed output is dropped, the replayed ones still count.
  const CheckpointPlan replayed = plan.with_kept(step, plan.replay_candidates);
  CHECK(rows_kept(replayed, &header) == static_cast<int64_t>(plan.replay_candidates.size()));
  CHECK(header == static_cast<int64_t>(plan.replay_candidates.size()));
  int64_t dropped = 0;
  for (const SummaryRow& row : summary_rows(replayed)) dropped += row.dropped;
  CHECK(dropped == static_cast<int64_t>(plan.candidates.size()));
}

TEST_CASE("CheckpointPlan::summary: regions of one scope are one row that counts all their calls once",
          "[planner]") {
  // Two regions of scope "block" with different calls ("block / ..." and "block.a / ...",
  // "block.b / ..."), each run twice.
  PlannedStep step = [](const PolicyFn& policy, Device device) {
    for (int i = 0; i < 2; ++i) {
      remat::testing::scoped_regions({"block"}, policy, device);
      remat::testing::scoped_regions({"block.a", "block.b"}, policy, device);
    }
  };
  const CheckpointPlan plan = plan_checkpointing(step, PlannerOptions{int64_t{1} << 40});
  std::vector<std::string> everything = plan.candidates;
  everything.insert(everything.end(), plan.replay_candidates.begin(), plan.replay_candidates.end());
  const CheckpointPlan all = plan.with_kept(step, everything);
  int64_t header = -1;
  const std::vector<SummaryRow> rows = summary_rows(all, &header);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].name == "block");
  CHECK(header == static_cast<int64_t>(everything.size()));
  CHECK(rows[0].kept == header);
}
