// The Pareto charts of bench/memory_vs_recompute: peak memory against step time or recomputed
// FLOPs, per strategy, with the planned frontiers (no PyTorch counterpart; see render.h).
#include "bench/render/internal.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace remat::bench {

using namespace render_internal;

std::string pareto_svg(const RunConfig& cfg, const std::vector<StrategyResult>& results,
                       const std::vector<StrategyResult>& frontier, ParetoX x,
                       const std::vector<StrategyResult>& offload_frontier) {
  const bool time = x == ParetoX::kStepTime;
  auto xval = [&](const StrategyResult& r) { return time ? r.median_ms : r.recomputed_flops_per_step / 1e9; };
  // A line for each frontier's legend.
  const double legend = (frontier.empty() ? 0 : 16) + (offload_frontier.empty() ? 0 : 16);
  const double W = 760, H = 490 + legend;
  const Box area{76, 76 + legend, W - 76 - 24, H - 76 - legend - 58};
  double top = 0;
  for (const auto& r : results) top = std::max(top, static_cast<double>(r.measured.peak_bytes));
  for (const auto& r : frontier) top = std::max(top, static_cast<double>(r.measured.peak_bytes));
  for (const auto& r : offload_frontier) top = std::max(top, static_cast<double>(r.measured.peak_bytes));
  const Unit u = unit_for(top);
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  auto extend = [&](const StrategyResult& r) {
    xmin = std::min(xmin, xval(r));
    xmax = std::max(xmax, xval(r));
    ymin = std::min(ymin, r.measured.peak_bytes / u.bytes);
    ymax = std::max(ymax, r.measured.peak_bytes / u.bytes);
  };
  for (const auto& r : results) extend(r);
  for (const auto& r : frontier) extend(r);
  for (const auto& r : offload_frontier) extend(r);
  if (results.empty() && frontier.empty() && offload_frontier.empty()) xmin = ymin = 0, xmax = ymax = 1;
  const Axis xa = axis_near_data(xmin, xmax), ya = axis_near_data(ymin, ymax);
  auto px = [&](double v) { return area.x + area.w * (v - xa.lo) / (xa.hi - xa.lo); };
  auto py = [&](double mib) { return area.y + area.h - area.h * (mib - ya.lo) / (ya.hi - ya.lo); };
  auto point_x = [&](const StrategyResult& r) { return px(xval(r)); };
  auto point_y = [&](const StrategyResult& r) { return py(r.measured.peak_bytes / u.bytes); };

  std::ostringstream s;
  s << svg_open(W, H);
  s << text(area.x, 24,
            time ? "Peak memory against step time, per checkpointing strategy"
                 : "Peak memory against recomputed FLOPs, per checkpointing strategy",
            "font-size='15' font-weight='bold'");
  s << text(area.x, 42, model_text(cfg), "fill='#555'");
  s << text(area.x, 58,
            std::string("red: the Pareto front (no other strategy is both ") + (time ? "faster" : "cheaper") +
                " and smaller)",
            "fill='#555'");
  if (!frontier.empty())
    s << text(area.x, 74,
              "green: the planned frontier (plan_checkpointing at " + std::to_string(frontier.size()) +
                  " budgets, each run and measured)",
              "fill='#2ca02c'");
  if (!offload_frontier.empty())
    s << text(area.x, 74 + (frontier.empty() ? 0 : 16),
              "purple: keep/recompute/offload (--offload " + byte_size_text(cfg.offload_bytes) +
                  " of host memory, same budgets" +
                  (cfg.device.find("emulated") != std::string::npos ? "; emulated: no real link" : "") + ")",
              "fill='#9467bd'");
  // An emulated device's step times are CPU times of the emulation: the axis says so.
  const bool emulated = cfg.device.find("emulated") != std::string::npos;
  s << axes(area, xa, ya,
            time ? (emulated ? "median step time (ms) on the emulated device: CPU time, not GPU time"
                             : "median step time (ms)")
                 : "recomputed GFLOP per step",
            std::string("peak memory (") + u.name + ")");

  // The Pareto front: the points no other point beats in both x and memory.
  std::vector<const StrategyResult*> front;
  for (const auto& a : results) {
    bool dominated = false;
    for (const auto& b : results) {
      if (&a == &b) continue;
      if (xval(b) <= xval(a) && b.measured.peak_bytes <= a.measured.peak_bytes &&
          (xval(b) < xval(a) || b.measured.peak_bytes < a.measured.peak_bytes))
        dominated = true;
    }
    if (!dominated) front.push_back(&a);
  }
  std::sort(front.begin(), front.end(), [&](auto* a, auto* b) { return xval(*a) < xval(*b); });
  s << "<polyline fill='none' stroke='#d62728' stroke-width='1.5' stroke-dasharray='5,4' points='";
  for (size_t i = 0; i < front.size(); ++i) {
    if (i > 0) s << num(point_x(*front[i])) << "," << num(point_y(*front[i - 1])) << " ";
    s << num(point_x(*front[i])) << "," << num(point_y(*front[i])) << " ";
  }
  s << "'/>\n";

  // Labels keep off the front's line too (its segments as thin boxes), and off the frontier's
  // (small boxes along each segment).
  std::vector<Box> segments;
  for (size_t i = 1; i < front.size(); ++i) {
    const double x0 = point_x(*front[i - 1]), x1 = point_x(*front[i]);
    const double y0 = point_y(*front[i - 1]), y1 = point_y(*front[i]);
    segments.push_back(Box{x0, y0 - 1.5, x1 - x0, 3});
    segments.push_back(Box{x1 - 1.5, std::min(y0, y1), 3, std::abs(y1 - y0)});
  }
  auto measured_peak = [](const StrategyResult& r) { return r.measured.peak_bytes; };
  auto points = [&](const std::vector<StrategyResult>& f) {
    std::vector<std::pair<double, double>> p;
    for (const StrategyResult* r : by_peak(f, measured_peak)) p.emplace_back(point_x(*r), point_y(*r));
    return p;
  };
  s << frontier_line(points(frontier), "planned-frontier", kFrontierColor, &segments);
  s << frontier_line(points(offload_frontier), "planned-frontier-offload", kOffloadColor, &segments, "7,4");
  const double marker = 5, font = 12;
  std::vector<PointLabel> labels;
  for (const auto& r : results) labels.push_back(PointLabel{point_x(r), point_y(r), r.name});
  std::vector<Box> boxes = place_labels(labels, area, font, marker, segments);
  for (size_t i = 0; i < results.size(); ++i) {
    const PointLabel& l = labels[i];
    const Box& b = boxes[i];
    // A leader line where the label had to move away from its point.
    const double nx = std::clamp(l.x, b.x, b.x + b.w), ny = std::clamp(l.y, b.y, b.y + b.h);
    if (std::hypot(nx - l.x, ny - l.y) > marker + 8) s << line(l.x, l.y, nx, ny, "stroke='#999' stroke-width='0.8'");
    bool on_front = std::find(front.begin(), front.end(), &results[i]) != front.end();
    const char* fill = results[i].planned() ? "#2ca02c" : on_front ? "#d62728" : "#1f77b4";
    s << "<circle cx='" << num(l.x) << "' cy='" << num(l.y) << "' r='" << num(marker) << "' fill='" << fill << "'"
      << (results[i].planned() && on_front ? " stroke='#d62728' stroke-width='2'" : "") << "/>\n";
    s << text(b.x, b.y + b.h - 0.3 * font, l.text);
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace remat::bench
