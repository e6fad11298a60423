// CheckpointPlan::applied_to (see checkpoint/planner.h; no PyTorch counterpart): a plan, e.g. one
// read from a file, checked region by region and call by call against a step's own profile, then
// its decisions priced on that profile by a dry run.
#include <algorithm>
#include <map>

#include "checkpoint/plan_data.h"
#include "checkpoint/planner.h"
#include "checkpoint/planner_dry_runs.h"

namespace remat {

using namespace planner_detail;

namespace {

// `aten::mm #1 -> f32[8x64],...`: a call as the mismatch messages show it.
std::string shown_call(const Data::Call& c, int64_t index) {
  std::string text = canonical_call(c.op, c.outputs);
  text.pop_back();  // the ';'
  const size_t paren = text.find('(');
  return c.op + " #" + std::to_string(index) + " -> " + text.substr(paren + 1, text.size() - paren - 2);
}

std::string region_list(const std::vector<const Data::Region*>& regions) {
  std::string s;
  for (size_t i = 0; i < regions.size() && i < 8; ++i) s += (i > 0 ? ", '" : "'") + regions[i]->scope + "'";
  return regions.size() > 8 ? s + ", ..." : s;
}

[[noreturn]] void differs(const std::string& what) {
  throw CheckpointError("CheckpointPlan::applied_to: the plan does not match the step: " + what +
                        " (plan again for this model and configuration)");
}

}  // namespace

CheckpointPlan CheckpointPlan::applied_to(const PlannedStep& step) const {
  if (data == nullptr)
    throw CheckpointError("CheckpointPlan::applied_to: an empty plan (make one with plan_checkpointing or load one)");
  PlannerOptions options = data->options;
  options.budget_bytes = budget_bytes;
  options.counter = counter;
  const bool offloads = std::any_of(data->calls.begin(), data->calls.end(), [](const Data::Call& c) { return c.offloaded; });
  if (offloads && options.host_budget_bytes == 0) options.host_budget_bytes = INT64_MAX;  // as with_kept prices them
  Planner planner(step, options);
  planner.who = "CheckpointPlan::applied_to";
  planner.profile_name = "its profiling run";
  planner.run(KeepSet{}, /*profile=*/true);
  const std::vector<const Data::Region*> mine = file_regions(*data), theirs = file_regions(planner.data);
  KeepSet set{std::vector<bool>(planner.data.calls.size(), false),
              offloads ? std::vector<bool>(planner.data.calls.size(), false) : std::vector<bool>()};
  for (size_t i = 0; i < std::max(mine.size(), theirs.size()); ++i) {
    if (i >= theirs.size())
      differs("the step runs " + std::to_string(theirs.size()) + " regions (" + region_list(theirs) +
              "), the plan's region " + std::to_string(i + 1) + " is '" + mine[i]->scope + "'");
    if (i >= mine.size())
      differs("the plan has " + std::to_string(mine.size()) + " regions, the step's region " + std::to_string(i + 1) +
              " is '" + theirs[i]->scope + "'");
    const Data::Region& p = *mine[i];
    const Data::Region& s = *theirs[i];
    if (p.scope != s.scope)
      differs("region " + std::to_string(i + 1) + " is '" + p.scope + "' in the plan, '" + s.scope + "' in the step");
    std::map<std::string, int64_t> per_op;
    for (size_t k = 0; k < std::max(p.calls.size(), s.calls.size()); ++k) {
      const std::string at = "region '" + p.scope + "', call " + std::to_string(k + 1) + ": ";
      if (k >= s.calls.size()) {
        const Data::Call& want = data->calls[p.calls[k]];
        differs(at + "the plan has " + shown_call(want, per_op[want.op]) + ", the step's region ends after " +
                std::to_string(s.calls.size()) + " calls");
      }
      const Data::Call& seen = planner.data.calls[s.calls[k]];
      const int64_t index = per_op[seen.op]++;
      if (k >= p.calls.size())
        differs(at + "the step runs " + shown_call(seen, index) + ", the plan's region ends after " +
                std::to_string(p.calls.size()) + " calls");
      const Data::Call& want = data->calls[p.calls[k]];
      if (want.op != seen.op || !(want.outputs == seen.outputs))
        differs(at + "the plan has " + shown_call(want, index) + ", the step runs " + shown_call(seen, index));
      set.keep[s.calls[k]] = want.kept;
      if (offloads) set.offload[s.calls[k]] = want.offloaded;
    }
  }
  CheckpointPlan plan = *this;
  finish_plan(planner, set, &plan);
  plan.dry_runs = planner.dry_runs() + planner.offload_dry_runs();
  return plan;
}

}  // namespace remat
