// --compare with --sweep: each sweep budget beside PyTorch's run of the plan exported for it
// (bench/torch_reference.py --plan), matched by budget bytes (no PyTorch counterpart; see render.h).
#include "bench/render/internal.h"

#include <cstdio>
#include <map>

namespace remat::bench {

using namespace render_internal;

PlanMatches match_plans(const std::vector<StrategyResult>& sweep, const std::vector<StrategyResult>& theirs) {
  PlanMatches m;
  std::map<int64_t, const StrategyResult*> by_budget;  // PyTorch's plan rows, the first of each budget
  for (const StrategyResult& t : theirs) {
    if (!t.planned()) continue;
    auto [it, first] = by_budget.emplace(t.budget_bytes, &t);
    if (!first)
      m.notes.push_back("PyTorch's rows " + it->second->name + " and " + t.name + " both ran a plan for " +
                        std::to_string(t.budget_bytes) + " bytes: " + it->second->name + " is compared");
  }
  std::map<int64_t, bool> swept;
  for (const StrategyResult& r : sweep) {
    if (!r.planned()) continue;
    swept[r.budget_bytes] = true;
    auto it = by_budget.find(r.budget_bytes);
    m.rows.push_back({&r, it == by_budget.end() ? nullptr : it->second});
  }
  for (const auto& [budget, t] : by_budget) {
    if (swept.count(budget) != 0) continue;
    m.notes.push_back("PyTorch's row " + t->name + " ran a plan for " + std::to_string(budget) +
                      " bytes, which is not a budget of this sweep: not compared");
  }
  return m;
}

namespace {

// Whether the plan PyTorch ran predicted what this run's plan for the budget predicts.
std::string same_plan_text(const StrategyResult& ours, const StrategyResult& theirs) {
  if (!theirs.predicted.known) return "not recorded";
  if (theirs.predicted.activation_bytes == ours.predicted.activation_bytes &&
      theirs.predicted.peak_bytes == ours.plan_predicted_peak_bytes)
    return "same";
  return "differs: " + std::to_string(theirs.predicted.activation_bytes);
}

}  // namespace

Table plan_comparison_table(const std::vector<StrategyResult>& sweep, const std::vector<StrategyResult>& theirs) {
  Table t;
  t.header = {"budget bytes", "remat predicted", "remat measured", "PyTorch measured", "PyTorch / predicted",
              "remat ms", "PyTorch ms", "plan's prediction"};
  for (const PlanMatch& p : match_plans(sweep, theirs).rows) {
    const StrategyResult& r = *p.ours;
    std::vector<std::string> row = {std::to_string(r.budget_bytes), std::to_string(r.predicted.activation_bytes),
                                    r.measured.known ? std::to_string(r.measured.activation_bytes) : "-"};
    if (p.theirs == nullptr || !p.theirs->measured.known) {
      row.insert(row.end(), {"not run", "-", r.measured.known ? fmt("%.1f", r.median_ms) : "-", "-", "-"});
    } else {
      const StrategyResult& o = *p.theirs;
      const int64_t predicted = r.predicted.activation_bytes;
      row.insert(row.end(), {std::to_string(o.measured.activation_bytes),
                             predicted > 0 ? fmt("%.4f", o.measured.activation_bytes / double(predicted)) : "-",
                             r.measured.known ? fmt("%.1f", r.median_ms) : "-", fmt("%.1f", o.median_ms),
                             same_plan_text(r, o)});
    }
    t.rows.push_back(row);
  }
  t.notes = {
      "activation bytes: allocated during forward and still alive after it; remat predicted: the plan's dry run;",
      "PyTorch measured: bench/torch_reference.py --plan under the plan exported for the budget (--export-plan DIR);",
      "ms: median step time; plan's prediction: 'same' when the file PyTorch ran predicted this run's activation",
      "bytes and peak for the budget, else the file's activation bytes (a plan made again: the planner times calls",
      "on a busy machine; --plan DIR runs remat under the exported files); not run: no PyTorch row for the budget.",
  };
  return t;
}

void print_plan_comparison(const RunConfig& ours_cfg, const std::vector<StrategyResult>& sweep,
                           const RunConfig& theirs_cfg, const std::vector<StrategyResult>& theirs) {
  const PlanMatches m = match_plans(sweep, theirs);
  if (m.rows.empty()) {
    size_t plans = 0;
    for (const StrategyResult& t : theirs) plans += t.planned() ? 1 : 0;
    if (plans > 0)
      std::printf("%s ran %zu plan(s) (torch_reference.py --plan); --sweep N compares them with remat's plans for "
                  "the same budgets\n",
                  theirs_cfg.framework.c_str(), plans);
    return;
  }
  const Table t = plan_comparison_table(sweep, theirs);
  std::printf("\nremat (%s) and %s (%s) under the same plan, a row per sweep budget:\n\n%s\n", ours_cfg.dtype.c_str(),
              theirs_cfg.framework.c_str(), theirs_cfg.dtype.c_str(), table_text(t).c_str());
  for (const std::string& n : t.notes) std::printf("%s\n", n.c_str());
  for (const std::string& n : m.notes) std::printf("%s\n", n.c_str());
}

}  // namespace remat::bench
