// The --offload table: keep/recompute beside keep/recompute/offload at each budget, and what its
// figures are (no PyTorch counterpart; see render.h).
#include "bench/render/internal.h"

#include <cstdio>

namespace remat::bench {

using namespace render_internal;

std::string offload_caveat(const RunConfig& cfg) {
  if (cfg.device.find("emulated") != std::string::npos)
    return "modeled, not measured: the emulated device has no real link";
  if (cfg.dry_run) return "modeled, not measured: a dry run moves no bytes";
  return "transfer times modeled at the planner's host link bandwidth; peaks and step times measured";
}

Table offload_table(const std::vector<StrategyResult>& sweep, const std::vector<StrategyResult>& offload) {
  Table t;
  t.header = {"budget MiB", "peak MiB",    "+off peak", "+off measured", "recomp us", "cost us",  "+off recomp",
              "transfer us", "+off cost us", "host peak MiB", "offloaded MiB", "calls", "saved", "step ms",
              "+off step ms"};
  auto us = [](double seconds) { return fmt("%.1f", seconds * 1e6); };
  double bandwidth = 0;
  for (const StrategyResult& o : offload) {
    const StrategyResult* p = planned_at(sweep, o.budget_bytes);
    bandwidth = o.plan_host_link_bandwidth;
    t.rows.push_back({mib(o.budget_bytes, "%.2f"), p ? mib(p->plan_predicted_peak_bytes, "%.2f") : "-",
                      mib(o.plan_predicted_peak_bytes, "%.2f"), o.measured.known ? mib(o.measured_plan_peak(), "%.2f") : "-",
                      p ? us(p->plan_recompute_seconds) : "-", p ? us(p->plan_overhead_seconds) : "-",
                      us(o.plan_recompute_seconds), us(o.plan_transfer_seconds), us(o.plan_overhead_seconds),
                      mib(o.plan_host_peak_bytes, "%.2f"), mib(o.plan_offloaded_bytes, "%.2f"),
                      std::to_string(o.plan_offloaded_calls),
                      p && p->plan_overhead_seconds > 0
                          ? fmt("%.0f%%", (1 - o.plan_overhead_seconds / p->plan_overhead_seconds) * 100)
                          : "-",
                      p && p->measured.known ? fmt("%.1f", p->median_ms) : "-",
                      o.measured.known ? fmt("%.1f", o.median_ms) : "-"});
  }
  t.notes = {
      "each device budget planned twice: keep/recompute (peak, recomp, cost) and keep/recompute/offload (+off);",
      "peak: the plan's predicted device peak of " + (offload.empty() ? std::string("allocated") : offload[0].plan_counter) +
          " memory (the dry run's, what a real step shows);",
      "+off measured: the offload plan's measured device peak of the same (- after --dry-run); recomp us: the",
      "planner's price of the recompute per step, in microseconds;",
      "transfer us: the modeled transfer time compute does not hide (checkpoint/offload_cost.h), at " +
          fmt("%.1f", bandwidth / 1e9) + " GB/s each way;",
      "cost us: recompute + exposed transfer (CheckpointPlan::predicted_cost_seconds, what the planner minimises);",
      "host peak: pinned host bytes held at once; offloaded: bytes copied to host and back per step, in `calls` op",
      "outputs; saved: the offload plan's cost below the keep/recompute plan's; step ms: the measured median step",
      "times of the two plans (- after --dry-run; on the emulated device CPU time, its copies no real link's).",
  };
  return t;
}

void print_offload(const RunConfig& cfg, const std::vector<StrategyResult>& sweep,
                   const std::vector<StrategyResult>& offload) {
  if (offload.empty()) return;
  Table t = offload_table(sweep, offload);
  std::printf("\nkeep/recompute against keep/recompute/offload (--offload %s of host memory); %s:\n\n%s\n",
              byte_size_text(cfg.offload_bytes).c_str(), offload_caveat(cfg).c_str(), table_text(t).c_str());
  for (const std::string& n : t.notes) std::printf("%s\n", n.c_str());
  if (!cfg.host_link_source.empty())
    std::printf("the host link's bandwidth: %.1f GB/s each way (%s; the datasheet's: %.1f GB/s)\n",
                offload.front().plan_host_link_bandwidth / 1e9, cfg.host_link_source.c_str(),
                cfg.host_link_datasheet / 1e9);
}

}  // namespace remat::bench
