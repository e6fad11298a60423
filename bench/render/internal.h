// Internal to bench/render (no PyTorch counterpart): the pieces the pictures and the report are
// made of. Not part of the package's interface (render.h); only plots.cpp, report.cpp and their
// tests include it (Bazel: //bench/render:internal is visible to //tests only).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/render/render.h"
#include "bench/strategy_result.h"

namespace remat::bench {

// ---- drawing (plots.cpp) ----

// Text for XML and HTML: < > & ' escaped.
std::string escape_xml(const std::string& s);

// A rectangle in SVG pixels: top-left corner and size.
struct Box {
  double x = 0, y = 0, w = 0, h = 0;
};
bool overlaps(const Box& a, const Box& b);
// Width of `text` in a sans-serif font of `font_size` pixels, slightly overestimated.
double text_width(const std::string& text, double font_size);

// A label to put beside the point (x, y).
struct PointLabel {
  double x = 0, y = 0;
  std::string text;
};
// Greedy placement: each label takes the first spot around its point (right, left, above, below,
// the diagonals, then the same further out) that stays inside `area` and overlaps neither a
// label placed before it nor any point's marker (a square of `marker_radius` around each point)
// nor an obstacle (e.g. a line drawn in the plot). Where none is free, the spot overlapping
// least. Returns the text boxes, in the labels' order.
std::vector<Box> place_labels(const std::vector<PointLabel>& labels, const Box& area, double font_size,
                              double marker_radius, const std::vector<Box>& obstacles = {});

// An axis range with ticks at 1, 2, 2.5 or 5 times a power of ten.
struct Axis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;
};
// Covers [min, max] with a margin; starts at 0 only where the data come near 0 (min within half
// the data's spread of it), else just below the data.
Axis axis_near_data(double min, double max, int target_ticks = 5);
// From 0 to at least max (stacked areas start at 0).
Axis axis_from_zero(double max, int target_ticks = 5);

// Live bytes per category after each event of a step: the running sum of the events' deltas
// from the step's start. A relabel's two halves (-n from one category, +n to another) count as
// one event, so that the categories sum to `allocated` at every sample.
struct CategoryStack {
  std::vector<size_t> event;                                     // index into the events
  std::vector<std::array<int64_t, kNumMemoryCategories>> bytes;  // by MemoryCategory
  std::vector<int64_t> allocated;                                // memory_allocated then
  std::vector<int64_t> reserved;                                 // memory_reserved then
};
CategoryStack stack_by_category(const StepTimeline& t);

// Runs of events in one phase: events [begin, end) of `phase`.
struct PhaseBand {
  std::string phase;
  size_t begin = 0, end = 0;
};
std::vector<PhaseBand> phase_bands(const StepTimeline& t);

// ---- tables (report.cpp) ----

// measured / predicted with three decimals: "1.000" only when the two are equal to the byte
// ("~1.000" when they differ by less than the rounding), "-" when nothing was predicted.
std::string ratio_text(int64_t measured, int64_t predicted);

std::string table_text(const Table& t);
std::string table_html(const Table& t);

// The step times measured with every strategy one step in turn (StrategyResult::interleaved_ms):
// strategy, median, overhead against 'none' (when run), and the median of its own run beside it.
// No rows when nothing was measured that way.
Table interleaved_table(const std::vector<StrategyResult>& results);
// The sweep, one row per plan: budget, the plan's predicted peak, the measured peak, fits,
// recomputed FLOPs, median step time, planning time.
Table sweep_table(const std::vector<StrategyResult>& sweep);
// --offload: one row per budget, the keep/recompute plan (`sweep`) beside the one that may also
// offload (`offload`, matched by budget): device budget, each plan's predicted peak (and the
// offload plan's measured peak when run), recompute ms, transfer ms and modeled cost ms
// (recompute + exposed transfer), the offload plan's host peak and offloaded bytes, and the
// cost it saves.
Table offload_table(const std::vector<StrategyResult>& sweep, const std::vector<StrategyResult>& offload);
// Each measured fixed strategy beside the plan made for its own measured peak: step times and
// their ratio (the plan should be no slower: ratio <= 1.03), recomputed FLOPs.
Table comparison_table(const std::vector<StrategyResult>& results, const std::vector<StrategyResult>& sweep);

}  // namespace remat::bench
