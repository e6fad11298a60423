// The memory timeline of one step, stacked by category over the phases (no PyTorch counterpart;
// in the spirit of torch.cuda.memory._record_memory_history's viewer; see render.h).
#include "bench/render/internal.h"

#include <algorithm>
#include <sstream>

namespace remat::bench {

using namespace render_internal;

namespace {

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

}  // namespace

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
