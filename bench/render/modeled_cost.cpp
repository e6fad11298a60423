// The --offload chart of bench/memory_vs_recompute: predicted peak against modeled step cost, per
// plan, by the planner's figures alone (no PyTorch counterpart; see render.h).
#include "bench/render/internal.h"

#include <algorithm>
#include <sstream>

namespace remat::bench {

using namespace render_internal;

std::string modeled_cost_svg(const RunConfig& cfg, const std::vector<StrategyResult>& frontier,
                             const std::vector<StrategyResult>& offload_frontier) {
  const double W = 760, H = 522;
  const Box area{76, 108, W - 76 - 24, H - 108 - 58};
  auto peak = [](const StrategyResult& r) { return r.plan_predicted_peak_bytes; };
  double top = 0;
  for (const auto* f : {&frontier, &offload_frontier})
    for (const auto& r : *f) top = std::max(top, static_cast<double>(peak(r)));
  const Unit u = unit_for(top);
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  for (const auto* f : {&frontier, &offload_frontier})
    for (const auto& r : *f) {
      xmin = std::min(xmin, r.plan_overhead_seconds * 1e6);
      xmax = std::max(xmax, r.plan_overhead_seconds * 1e6);
      ymin = std::min(ymin, peak(r) / u.bytes);
      ymax = std::max(ymax, peak(r) / u.bytes);
    }
  if (frontier.empty() && offload_frontier.empty()) xmin = ymin = 0, xmax = ymax = 1;
  const Axis xa = axis_near_data(xmin, xmax), ya = axis_near_data(ymin, ymax);
  auto px = [&](double v) { return area.x + area.w * (v - xa.lo) / (xa.hi - xa.lo); };
  auto py = [&](double v) { return area.y + area.h - area.h * (v - ya.lo) / (ya.hi - ya.lo); };
  auto points = [&](const std::vector<StrategyResult>& f) {
    std::vector<std::pair<double, double>> p;
    for (const StrategyResult* r : by_peak(f, peak)) p.emplace_back(px(r->plan_overhead_seconds * 1e6), py(peak(*r) / u.bytes));
    return p;
  };
  std::ostringstream s;
  s << svg_open(W, H);
  s << text(area.x, 24, "Predicted peak memory against modeled step cost, per plan", "font-size='15' font-weight='bold'");
  s << text(area.x, 42, model_text(cfg), "fill='#555'");
  s << text(area.x, 58, offload_caveat(cfg), "fill='#c62828' font-weight='bold'");
  s << text(area.x, 74,
            "green: keep/recompute plans (plan_checkpointing at " + std::to_string(frontier.size()) + " budgets)",
            "fill='#2ca02c'");
  s << text(area.x, 90,
            "purple: keep/recompute/offload plans at the same budgets (--offload " + byte_size_text(cfg.offload_bytes) +
                " of host memory)",
            "fill='#9467bd'");
  s << axes(area, xa, ya, "modeled cost per step (microseconds): recompute + transfer not hidden by compute",
            std::string("predicted peak memory (") + u.name + ")");
  std::vector<Box> obstacles;
  s << frontier_line(points(frontier), "planned-frontier", kFrontierColor, &obstacles);
  s << frontier_line(points(offload_frontier), "planned-frontier-offload", kOffloadColor, &obstacles, "7,4");
  s << "</svg>\n";
  return s.str();
}

}  // namespace remat::bench
