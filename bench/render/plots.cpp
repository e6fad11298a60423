// SVG pictures of bench/memory_vs_recompute (see render.h; the pieces they are made of, internal.h).
#include "bench/render/internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace remat::bench {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// A coordinate or length, one decimal (keeps the files small).
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

// A tick label: as many decimals as the tick spacing needs (0.25 needs two).
std::string tick_text(double v, const Axis& axis) {
  const double step = axis.ticks.size() > 1 ? axis.ticks[1] - axis.ticks[0] : 1;
  int decimals = 0;
  for (double scaled = step; decimals < 6 && std::abs(scaled - std::round(scaled)) > 1e-6 * scaled; scaled *= 10)
    ++decimals;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// The smallest of 1, 2, 2.5, 5 times a power of ten that cuts `span` into at most target + 1.5 steps.
double nice_step(double span, int target_ticks) {
  double raw = span / std::max(1, target_ticks);
  double mag = std::pow(10.0, std::floor(std::log10(raw)) - 1);
  for (int i = 0; i < 12; ++i, mag *= 10)
    for (double m : {1.0, 2.0, 2.5, 5.0})
      if (span / (m * mag) <= target_ticks + 1.5) return m * mag;
  return raw;
}

// Ticks every 1, 2, 2.5 or 5 times a power of ten; the range widened to whole ticks unless `exact`.
Axis make_axis(double lo, double hi, int target_ticks, bool exact = false) {
  Axis a;
  double step = nice_step(hi - lo, target_ticks);
  a.lo = exact ? lo : std::floor(lo / step + 1e-9) * step;
  a.hi = exact ? hi : std::ceil(hi / step - 1e-9) * step;
  for (double t = std::ceil(a.lo / step - 1e-9) * step; t <= a.hi + step * 1e-6; t += step)
    a.ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return a;
}

// Bytes in MiB, or GiB from 8 GiB up (a GPT-2-XL dry run).
struct Unit {
  double bytes;
  const char* name;
};
Unit unit_for(double max_bytes) { return max_bytes >= 8 * 1024 * kMiB ? Unit{1024 * kMiB, "GiB"} : Unit{kMiB, "MiB"}; }

std::string bytes_text(int64_t bytes, const Unit& u) {
  char buf[32];
  std::snprintf(buf, sizeof buf, u.bytes > kMiB ? "%.2f %s" : "%.1f %s", static_cast<double>(bytes) / u.bytes, u.name);
  return buf;
}

double overlap_area(const Box& a, const Box& b) {
  double w = std::min(a.x + a.w, b.x + b.w) - std::max(a.x, b.x);
  double h = std::min(a.y + a.h, b.y + b.h) - std::max(a.y, b.y);
  return w > 0 && h > 0 ? w * h : 0;
}

bool inside(const Box& inner, const Box& outer) {
  return inner.x >= outer.x && inner.y >= outer.y && inner.x + inner.w <= outer.x + outer.w &&
         inner.y + inner.h <= outer.y + outer.h;
}

std::string svg_open(double w, double h) {
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << num(w) << "' height='" << num(h) << "' viewBox='0 0 "
    << num(w) << " " << num(h) << "' font-family='DejaVu Sans, Helvetica, Arial, sans-serif' font-size='12'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n";
  return s.str();
}

std::string text(double x, double y, const std::string& t, const std::string& attrs = "") {
  return "<text x='" + num(x) + "' y='" + num(y) + "'" + (attrs.empty() ? "" : " " + attrs) + ">" + escape_xml(t) +
         "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& attrs) {
  return "<line x1='" + num(x1) + "' y1='" + num(y1) + "' x2='" + num(x2) + "' y2='" + num(y2) + "' " + attrs + "/>\n";
}

std::string rect(const Box& b, const std::string& attrs) {
  return "<rect x='" + num(b.x) + "' y='" + num(b.y) + "' width='" + num(b.w) + "' height='" + num(b.h) + "' " + attrs +
         "/>\n";
}

std::string model_text(const RunConfig& cfg) {
  std::ostringstream s;
  s << "GPT " << cfg.shape.layers << " layers, d_model " << cfg.shape.embd << ", seq " << cfg.shape.seq << ", batch "
    << cfg.shape.batch << " (" << cfg.device << ", " << cfg.dtype << ")";
  return s.str();
}

// Axis lines, grid, ticks and labels of a plot area.
std::string axes(const Box& area, const Axis& xa, const Axis& ya, const std::string& xlabel,
                 const std::string& ylabel) {
  auto px = [&](double v) { return area.x + area.w * (v - xa.lo) / (xa.hi - xa.lo); };
  auto py = [&](double v) { return area.y + area.h - area.h * (v - ya.lo) / (ya.hi - ya.lo); };
  std::ostringstream s;
  for (double t : xa.ticks) {
    s << line(px(t), area.y, px(t), area.y + area.h, "stroke='#000' stroke-opacity='0.08'");
    s << line(px(t), area.y + area.h, px(t), area.y + area.h + 4, "stroke='#444'");
    s << text(px(t), area.y + area.h + 17, tick_text(t, xa), "text-anchor='middle' fill='#333'");
  }
  for (double t : ya.ticks) {
    s << line(area.x, py(t), area.x + area.w, py(t), "stroke='#000' stroke-opacity='0.08'");
    s << line(area.x - 4, py(t), area.x, py(t), "stroke='#444'");
    s << text(area.x - 7, py(t) + 4, tick_text(t, ya), "text-anchor='end' fill='#333'");
  }
  s << line(area.x, area.y + area.h, area.x + area.w, area.y + area.h, "stroke='#444'");
  s << line(area.x, area.y, area.x, area.y + area.h, "stroke='#444'");
  s << text(area.x + area.w / 2, area.y + area.h + 38, xlabel, "text-anchor='middle'");
  s << "<text transform='translate(" << num(area.x - 48) << "," << num(area.y + area.h / 2)
    << ") rotate(-90)' text-anchor='middle'>" << escape_xml(ylabel) << "</text>\n";
  return s.str();
}

struct CategoryStyle {
  const char* label;
  const char* color;
};
// Indexed by MemoryCategory.
const CategoryStyle kCategoryStyle[kNumMemoryCategories] = {
    {"parameters", "#4e79a7"},  {"buffers", "#76b7b2"},     {"optimizer state", "#59a14f"}, {"gradients", "#edc948"},
    {"activations", "#e15759"}, {"temporaries", "#f28e2b"}, {"other", "#bab0ac"},
    {"offloaded (host)", "#b07aa1"},
};

struct PhaseStyle {
  const char* phase;
  const char* strip;       // the labelled strip above the plot
  const char* background;  // the band behind the areas
};
const PhaseStyle kPhaseStyle[] = {
    {"forward", "#6baed6", "#e3eff9"},
    {"backward", "#fd8d3c", "#fde9d9"},
    {"recompute", "#9e72c3", "#efe4f8"},
    {"optimizer", "#74c476", "#e6f4e4"},
};
const PhaseStyle* phase_style(const std::string& phase) {
  for (const PhaseStyle& p : kPhaseStyle)
    if (phase == p.phase) return &p;
  return nullptr;  // "other": not shaded
}

// The samples of a stack to draw across `pixels` columns: all of them where they fit, else per
// column the one with the most memory (a peak is never smoothed away).
std::vector<size_t> samples_to_draw(const CategoryStack& s, size_t events, double pixels) {
  std::vector<size_t> keep;
  const size_t n = s.event.size();
  if (static_cast<double>(n) <= pixels) {
    for (size_t i = 0; i < n; ++i) keep.push_back(i);
    return keep;
  }
  int64_t column = -1;
  for (size_t i = 0; i < n; ++i) {
    auto c = static_cast<int64_t>(static_cast<double>(s.event[i]) * pixels /
                                  static_cast<double>(std::max<size_t>(events, 1)));
    if (c != column || i == n - 1) {
      keep.push_back(i);
      column = c;
    } else if (s.allocated[i] > s.allocated[keep.back()]) {
      keep.back() = i;
    }
  }
  return keep;
}

// A planned frontier: a line through `points` (sorted by y, bottom to top: the plans in order of
// peak) as the polyline with `id` (dashed where `dashes` says, so that a line drawn over another
// leaves it visible), a square at each point; its markers and small boxes along its
// segments go into `obstacles` (labels keep off them).
std::string frontier_line(const std::vector<std::pair<double, double>>& points, const std::string& id,
                          const std::string& color, std::vector<Box>* obstacles, const std::string& dashes = "") {
  if (points.empty()) return "";
  std::ostringstream s;
  s << "<polyline id='" << id << "' fill='none' stroke='" << color << "' stroke-width='2'"
    << (dashes.empty() ? "" : " stroke-dasharray='" + dashes + "'") << " points='";
  for (const auto& [x, y] : points) s << num(x) << "," << num(y) << " ";
  s << "'/>\n";
  for (size_t i = 0; i < points.size(); ++i) {
    const auto [x1, y1] = points[i];
    s << rect(Box{x1 - 3.5, y1 - 3.5, 7, 7}, "fill='" + color + "'");
    obstacles->push_back(Box{x1 - 4, y1 - 4, 8, 8});
    if (i == 0) continue;
    const auto [x0, y0] = points[i - 1];
    const int pieces = std::max(1, static_cast<int>(std::hypot(x1 - x0, y1 - y0) / 6));
    for (int k = 1; k < pieces; ++k) {
      const double f = static_cast<double>(k) / pieces;
      obstacles->push_back(Box{x0 + f * (x1 - x0) - 2, y0 + f * (y1 - y0) - 2, 4, 4});
    }
  }
  return s.str();
}

// `frontier`'s points in order of `peak` (then of budget), as frontier_line draws them.
std::vector<const StrategyResult*> by_peak(const std::vector<StrategyResult>& frontier,
                                           int64_t (*peak)(const StrategyResult&)) {
  std::vector<const StrategyResult*> planned;
  for (const auto& r : frontier) planned.push_back(&r);
  std::sort(planned.begin(), planned.end(), [&](auto* a, auto* b) {
    return peak(*a) != peak(*b) ? peak(*a) < peak(*b) : a->budget_bytes < b->budget_bytes;
  });
  return planned;
}

constexpr const char* kFrontierColor = "#2ca02c";
constexpr const char* kOffloadColor = "#9467bd";

}  // namespace

std::string escape_xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '\'')
      out += "&apos;";
    else
      out += c;
  }
  return out;
}

bool overlaps(const Box& a, const Box& b) { return overlap_area(a, b) > 0; }

double text_width(const std::string& t, double font_size) {
  // DejaVu Sans (what rsvg and Chromium pick on Debian) averages about 0.6 em for lowercase,
  // digits and '-'; counting every character so errs a little wide, which is the safe side.
  return 0.62 * font_size * static_cast<double>(t.size());
}

std::vector<Box> place_labels(const std::vector<PointLabel>& labels, const Box& area, double font_size,
                              double marker_radius, const std::vector<Box>& obstacles) {
  std::vector<Box> markers = obstacles;
  for (const PointLabel& l : labels)
    markers.push_back(Box{l.x - marker_radius, l.y - marker_radius, 2 * marker_radius, 2 * marker_radius});
  std::vector<Box> placed;
  for (const PointLabel& l : labels) {
    const double w = text_width(l.text, font_size), h = font_size * 1.25;
    std::vector<Box> candidates;
    for (int ring = 0; ring < 8; ++ring) {
      const double d = marker_radius + 3 + ring * h * 0.8, diag = d * 0.75;
      candidates.push_back(Box{l.x + d, l.y - h / 2, w, h});            // right
      candidates.push_back(Box{l.x - d - w, l.y - h / 2, w, h});        // left
      candidates.push_back(Box{l.x - w / 2, l.y - d - h, w, h});        // above
      candidates.push_back(Box{l.x - w / 2, l.y + d, w, h});            // below
      candidates.push_back(Box{l.x + diag, l.y - diag - h, w, h});      // above right
      candidates.push_back(Box{l.x + diag, l.y + diag, w, h});          // below right
      candidates.push_back(Box{l.x - diag - w, l.y - diag - h, w, h});  // above left
      candidates.push_back(Box{l.x - diag - w, l.y + diag, w, h});      // below left
    }
    const Box* best = nullptr;
    double best_cost = 0;
    for (const Box& c : candidates) {
      double cost = inside(c, area) ? 0 : 1e9;
      for (const Box& p : placed) cost += overlap_area(c, p);
      for (const Box& m : markers) cost += overlap_area(c, m);
      if (best == nullptr || cost < best_cost) {
        best = &c;
        best_cost = cost;
      }
      if (cost == 0) break;  // the first free spot, the nearest one
    }
    placed.push_back(*best);
  }
  return placed;
}

Axis axis_near_data(double min, double max, int target_ticks) {
  if (max < min) std::swap(min, max);
  double spread = max - min;
  if (spread <= 0) spread = std::max(std::abs(max) * 0.1, 1e-9);
  double lo = min - 0.12 * spread, hi = max + 0.12 * spread;
  if (min >= 0 && min <= 0.5 * spread) lo = 0;  // the data come near 0: show it
  return make_axis(lo, hi, target_ticks);
}

Axis axis_from_zero(double max, int target_ticks) { return make_axis(0, max > 0 ? max * 1.05 : 1, target_ticks); }

CategoryStack stack_by_category(const StepTimeline& t) {
  CategoryStack s;
  std::array<int64_t, kNumMemoryCategories> live{};
  for (const auto& [category, bytes] : t.start_by_category) live[static_cast<size_t>(category)] = bytes;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const MemoryEvent& e = t.events[i];
    live[static_cast<size_t>(e.category)] += e.delta;
    if (e.relabel && e.delta < 0) continue;  // the first half of a relabel: wait for the second
    s.event.push_back(i);
    s.bytes.push_back(live);
    s.allocated.push_back(e.allocated);
    s.reserved.push_back(e.reserved);
  }
  return s;
}

std::vector<PhaseBand> phase_bands(const StepTimeline& t) {
  std::vector<PhaseBand> bands;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const std::string& p = t.events[i].phase;
    if (!bands.empty() && bands.back().phase == p)
      bands.back().end = i + 1;
    else
      bands.push_back(PhaseBand{p, i, i + 1});
  }
  return bands;
}

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

std::string timeline_svg(const RunConfig& cfg, const StrategyResult& r) {
  const double W = 900, H = 440;
  const Box area{72, 94, W - 72 - 210, H - 94 - 54};
  const bool measured = r.measured.known && !r.measured.timeline.empty();
  const StepTimeline& shown = measured ? r.measured.timeline : r.predicted.timeline;
  const bool dashed = measured && r.predicted.known && !r.predicted.timeline.empty();
  const CategoryStack stack = stack_by_category(shown);
  const CategoryStack predicted = dashed ? stack_by_category(r.predicted.timeline) : CategoryStack{};
  const size_t events = std::max(shown.events.size(), r.predicted.timeline.events.size());

  // Counting like CUDA, the caching allocator's reserved bytes are drawn over the allocated ones.
  const bool reserved = cfg.meta_accounting == "cuda";
  double top = 0;
  for (const CategoryStack* st : {&stack, &predicted}) {
    for (int64_t v : st->allocated) top = std::max(top, static_cast<double>(v));
    if (reserved)
      for (int64_t v : st->reserved) top = std::max(top, static_cast<double>(v));
  }
  const Unit u = unit_for(top);
  const Axis xa = make_axis(0, static_cast<double>(std::max<size_t>(events, 2) - 1), 6, /*exact=*/true);
  const Axis ya = axis_from_zero(top / u.bytes);
  auto px = [&](double event) { return area.x + area.w * (event - xa.lo) / (xa.hi - xa.lo); };
  auto py = [&](double v) { return area.y + area.h - area.h * (v - ya.lo) / (ya.hi - ya.lo); };

  std::ostringstream s;
  s << svg_open(W, H);
  s << text(area.x, 22, r.name + ": memory over one training step, by category", "font-size='15' font-weight='bold'");
  const int64_t peak = measured ? r.measured.peak_bytes : r.predicted.peak_bytes;
  std::ostringstream sub;
  sub << "step " << shown.step + 1 << " of " << cfg.warmup + cfg.steps << "; peak ";
  if (measured)
    sub << bytes_text(r.measured.peak_bytes, u) << " measured"
        << (dashed ? ", " + bytes_text(r.predicted.peak_bytes, u) + " predicted by the dry run" : "");
  else
    sub << bytes_text(r.predicted.peak_bytes, u) << ", predicted by a dry run on meta (nothing measured)";
  if (reserved)
    sub << "; reserved " << bytes_text(measured ? r.measured.peak_reserved_bytes : r.predicted.peak_reserved_bytes, u);
  s << text(area.x, 41, model_text(cfg), "fill='#555'");
  s << text(area.x, 57, sub.str(), "fill='#555'");

  // Phases: background bands and a labelled strip above the plot.
  const Box strip{area.x, area.y - 22, area.w, 16};
  std::vector<std::string> phases_seen;
  for (const PhaseBand& b : phase_bands(shown)) {
    const PhaseStyle* st = phase_style(b.phase);
    if (st == nullptr) continue;
    if (std::find(phases_seen.begin(), phases_seen.end(), b.phase) == phases_seen.end()) phases_seen.push_back(b.phase);
    const double x0 = px(static_cast<double>(b.begin)), x1 = std::max(px(static_cast<double>(b.end)), x0 + 0.5);
    s << rect(Box{x0, area.y, x1 - x0, area.h}, std::string("fill='") + st->background + "'");
    s << rect(Box{x0, strip.y, x1 - x0, strip.h}, std::string("fill='") + st->strip + "'");
    if (x1 - x0 > text_width(b.phase, 11) + 6)
      s << text((x0 + x1) / 2, strip.y + 12, b.phase, "text-anchor='middle' font-size='11' fill='white'");
  }

  // The stacked areas, parameters at the bottom.
  const std::vector<size_t> keep = samples_to_draw(stack, events, area.w);
  // A category is drawn (and listed) where it reaches half a pixel: not for the odd scalar.
  std::array<bool, kNumMemoryCategories> present{};
  const double half_pixel = 0.5 * (ya.hi - ya.lo) * u.bytes / area.h;
  for (const auto& b : stack.bytes)
    for (int c = 0; c < kNumMemoryCategories; ++c) present[c] = present[c] || static_cast<double>(b[c]) >= half_pixel;
  // Painted top-down, each category's polygon filled from its stacked top to the axis: the same
  // picture as one band per category, with half the points.
  std::vector<std::vector<double>> tops(kNumMemoryCategories, std::vector<double>(keep.size(), 0.0));
  for (size_t k = 0; k < keep.size(); ++k) {
    double sum = 0;
    for (int c = 0; c < kNumMemoryCategories; ++c) tops[c][k] = sum += stack.bytes[keep[k]][c] / u.bytes;
  }
  for (int c = kNumMemoryCategories - 1; c >= 0 && !keep.empty(); --c) {
    if (!present[c]) continue;
    s << "<polygon fill='" << kCategoryStyle[c].color << "' points='"
      << num(px(static_cast<double>(stack.event[keep.front()]))) << "," << num(py(0)) << " ";
    for (size_t k = 0; k < keep.size(); ++k)
      s << num(px(static_cast<double>(stack.event[keep[k]]))) << "," << num(py(tops[c][k])) << " ";
    s << num(px(static_cast<double>(stack.event[keep.back()]))) << "," << num(py(0)) << "'/>\n";
  }
  auto total_line = [&](const CategoryStack& st, const std::vector<int64_t>& series, const std::string& attrs) {
    std::ostringstream l;
    l << "<polyline fill='none' " << attrs << " points='";
    for (size_t k : samples_to_draw(st, events, area.w))
      l << num(px(static_cast<double>(st.event[k]))) << "," << num(py(series[k] / u.bytes)) << " ";
    l << "'/>\n";
    return l.str();
  };
  const std::string measured_style = "stroke='#222' stroke-width='2'";
  const std::string predicted_style = "stroke='#00b4ff' stroke-width='1.6' stroke-dasharray='7,5'";
  const std::string reserved_style = "stroke='#e6550d' stroke-width='2'";
  const std::string reserved_predicted_style = "stroke='#fdae6b' stroke-width='1.6' stroke-dasharray='7,5'";
  if (reserved) {
    s << total_line(stack, stack.reserved, measured ? reserved_style : reserved_predicted_style);
    if (dashed) s << total_line(predicted, predicted.reserved, reserved_predicted_style);
  }
  s << total_line(stack, stack.allocated, measured ? measured_style : predicted_style);
  if (dashed) s << total_line(predicted, predicted.allocated, predicted_style);

  // The peak, dotted, labelled at the left (where a step's memory is lowest).
  const double peak_y = py(peak / u.bytes);
  s << line(area.x, peak_y, area.x + area.w, peak_y, "stroke='#222' stroke-width='0.8' stroke-dasharray='2,3'");
  s << text(area.x + 6, peak_y - 5, "peak " + bytes_text(peak, u), "font-size='11' fill='#222'");

  s << axes(area, xa, ya, "memory event (every allocation and free of the step, in order)",
            std::string(reserved ? "allocated and reserved (" : "allocated (") + u.name + ")");

  // Legend: the stack top-down as drawn, the lines, the phases.
  double lx = area.x + area.w + 22, ly = area.y + 4;
  s << text(lx, ly, "memory (stacked)", "font-weight='bold'");
  ly += 8;
  for (int c = kNumMemoryCategories - 1; c >= 0; --c) {
    if (!present[c]) continue;
    s << rect(Box{lx, ly, 14, 12}, std::string("fill='") + kCategoryStyle[c].color + "'");
    s << text(lx + 20, ly + 10.5, kCategoryStyle[c].label);
    ly += 18;
  }
  // A group of lines: its title, then the measured line and the dry run's, each where drawn.
  auto line_legend = [&](const char* title, const std::string& measured_line, const std::string& predicted_line) {
    ly += 8;
    s << text(lx, ly + 4, title, "font-weight='bold'");
    ly += 12;
    if (measured) {
      s << line(lx, ly + 6, lx + 22, ly + 6, measured_line);
      s << text(lx + 28, ly + 10.5, "measured");
      ly += 18;
    }
    if (dashed || !measured) {
      s << line(lx, ly + 6, lx + 22, ly + 6, predicted_line);
      s << text(lx + 28, ly + 10.5, "dry-run prediction");
      ly += 18;
    }
  };
  line_legend("total", measured_style, predicted_style);
  if (reserved) line_legend("reserved (CUDA cache)", reserved_style, reserved_predicted_style);
  ly += 8;
  s << text(lx, ly + 4, "phase (shaded)", "font-weight='bold'");
  ly += 12;
  for (const PhaseStyle& p : kPhaseStyle) {
    if (std::find(phases_seen.begin(), phases_seen.end(), p.phase) == phases_seen.end()) continue;
    s << rect(Box{lx, ly, 14, 12}, std::string("fill='") + p.strip + "'");
    s << text(lx + 20, ly + 10.5, p.phase);
    ly += 18;
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace remat::bench
