// The pieces of bench/render's SVG pictures: SVG elements, axes, label placement, the planned
// frontier's line (no PyTorch counterpart; see internal.h).
#include "bench/render/internal.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace remat::bench {

using namespace render_internal;

namespace {

double overlap_area(const Box& a, const Box& b) {
  double w = std::min(a.x + a.w, b.x + b.w) - std::max(a.x, b.x);
  double h = std::min(a.y + a.h, b.y + b.h) - std::max(a.y, b.y);
  return w > 0 && h > 0 ? w * h : 0;
}

bool inside(const Box& inner, const Box& outer) {
  return inner.x >= outer.x && inner.y >= outer.y && inner.x + inner.w <= outer.x + outer.w &&
         inner.y + inner.h <= outer.y + outer.h;
}

}  // namespace

namespace render_internal {

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
Axis make_axis(double lo, double hi, int target_ticks, bool exact) {
  Axis a;
  double step = nice_step(hi - lo, target_ticks);
  a.lo = exact ? lo : std::floor(lo / step + 1e-9) * step;
  a.hi = exact ? hi : std::ceil(hi / step - 1e-9) * step;
  for (double t = std::ceil(a.lo / step - 1e-9) * step; t <= a.hi + step * 1e-6; t += step)
    a.ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return a;
}

Unit unit_for(double max_bytes) { return max_bytes >= 8 * 1024 * kMiB ? Unit{1024 * kMiB, "GiB"} : Unit{kMiB, "MiB"}; }

std::string bytes_text(int64_t bytes, const Unit& u) {
  char buf[32];
  std::snprintf(buf, sizeof buf, u.bytes > kMiB ? "%.2f %s" : "%.1f %s", static_cast<double>(bytes) / u.bytes, u.name);
  return buf;
}

std::string svg_open(double w, double h) {
  std::ostringstream s;
  s << "<svg xmlns='http://www.w3.org/2000/svg' width='" << num(w) << "' height='" << num(h) << "' viewBox='0 0 "
    << num(w) << " " << num(h) << "' font-family='DejaVu Sans, Helvetica, Arial, sans-serif' font-size='12'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n";
  return s.str();
}

std::string text(double x, double y, const std::string& t, const std::string& attrs) {
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

// A planned frontier: a line through `points` (sorted by y, bottom to top: the plans in order of
// peak) as the polyline with `id` (dashed where `dashes` says, so that a line drawn over another
// leaves it visible), a square at each point; its markers and small boxes along its
// segments go into `obstacles` (labels keep off them).
std::string frontier_line(const std::vector<std::pair<double, double>>& points, const std::string& id,
                          const std::string& color, std::vector<Box>* obstacles, const std::string& dashes) {
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

}  // namespace render_internal

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

}  // namespace remat::bench
