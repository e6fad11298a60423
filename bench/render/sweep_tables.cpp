// The planned frontier's tables (--sweep): one row per plan, and each fixed strategy beside the
// plan made for its own peak (no PyTorch counterpart; see render.h).
#include "bench/render/internal.h"

#include <algorithm>
#include <cstdio>

namespace remat::bench {

using namespace render_internal;

std::string planning_line(const StrategyResult& p) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s: planned for a budget of %s MiB (%lld bytes) of %s memory in %.2f s, %lld dry runs: predicted "
                "peak %s MiB, %.3f GFLOP recomputed per step",
                p.name.c_str(), mib(p.budget_bytes, "%.2f").c_str(), (long long)p.budget_bytes, p.plan_counter.c_str(),
                p.planning_seconds, (long long)p.planning_dry_runs, mib(p.plan_predicted_peak_bytes, "%.2f").c_str(),
                p.plan_recompute_flops / 1e9);
  return buf;
}

Table sweep_table(const std::vector<StrategyResult>& sweep) {
  Table t;
  const bool at = std::any_of(sweep.begin(), sweep.end(), [](const StrategyResult& r) { return !r.at_strategy.empty(); });
  t.header = {"plan", "budget MiB", "predicted", "measured", "fits", "recomp GF", "est ms", "step ms", "plan s"};
  if (at) t.header.push_back("at the peak of");
  for (const StrategyResult& r : sweep) {
    t.rows.push_back({r.name, mib(r.budget_bytes, "%.2f"), mib(r.plan_predicted_peak_bytes, "%.2f"),
                      r.measured.known ? mib(r.measured_plan_peak(), "%.2f") : "-", fits_text(r),
                      fmt("%.3f", r.recomputed_flops_per_step / 1e9), fmt("%.1f", r.plan_overhead_seconds * 1e3),
                      r.measured.known ? fmt("%.1f", r.median_ms) : "-",
                      fmt("%.2f", r.planning_seconds)});
    if (at) t.rows.back().push_back(r.at_strategy.empty() ? "-" : r.at_strategy);
  }
  t.notes = {
      "budget: what plan_checkpointing was given; predicted: the plan's dry-run peak; measured: the same counter over",
      "the measured steps (max_memory_reserved for a plan of reserved bytes, else allocated); fits: measured <= budget; recomp GF: GFLOP recomputed per step (measured); est ms:",
      "the planner's price of that recompute per step (what it minimises); step ms: median step time, the same steps",
      "as the strategies'; plan s: wall time of plan_checkpointing.",
  };
  return t;
}

Table comparison_table(const std::vector<StrategyResult>& results, const std::vector<StrategyResult>& sweep) {
  Table t;
  t.header = {"strategy", "peak MiB", "strategy ms", "planned ms", "ratio", "paired: strategy ms", "planned ms",
              "ratio", "strategy GF", "planned GF"};
  for (const StrategyResult& r : results) {
    if (r.planned() || !r.measured.known) continue;
    const StrategyResult* p = planned_at(sweep, r.measured.peak_bytes);
    if (p == nullptr) continue;
    std::vector<std::string> paired = {"-", "-", "-"};
    for (const StrategyResult::PairedTiming& pt : p->paired)
      if (pt.strategy == r.name && pt.strategy_ms > 0)
        paired = {fmt("%.1f", pt.strategy_ms), fmt("%.1f", pt.planned_ms), fmt("%.3f", pt.planned_ms / pt.strategy_ms)};
    t.rows.push_back({r.name, mib(r.measured.peak_bytes), fmt("%.1f", r.median_ms),
                      p->measured.known ? fmt("%.1f", p->median_ms) : "-",
                      p->measured.known && r.median_ms > 0 ? fmt("%.3f", p->median_ms / r.median_ms) : "-", paired[0],
                      paired[1], paired[2], fmt("%.3f", r.recomputed_flops_per_step / 1e9),
                      fmt("%.3f", p->recomputed_flops_per_step / 1e9)});
  }
  t.notes = {
      "planned: plan_checkpointing given the strategy's own measured peak as its budget, run the same way;",
      "ratio: planned / strategy median step time (at most 1.03: the plan is no slower, 3% noise allowed);",
      "paired: the two step by step in turn in one process (a slow spell hits both), medians; the fairer test.",
  };
  return t;
}

void print_sweep(const std::vector<StrategyResult>& results, const std::vector<StrategyResult>& sweep) {
  if (sweep.empty()) return;
  Table s = sweep_table(sweep);
  std::printf("\nthe planned frontier:\n\n%s\n", table_text(s).c_str());
  for (const std::string& n : s.notes) std::printf("%s\n", n.c_str());
  Table c = comparison_table(results, sweep);
  if (c.rows.empty()) return;
  std::printf("\nplanned at each strategy's own peak:\n\n%s\n", table_text(c).c_str());
  for (const std::string& n : c.notes) std::printf("%s\n", n.c_str());
}

}  // namespace remat::bench
