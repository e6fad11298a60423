// Internal to bench/render (no PyTorch counterpart): the pieces the pictures and the report are
// made of. Not part of the package's interface (render.h); only the package's sources and their
// tests include it (Bazel: //bench/render:internal is visible to //tests only). The helpers the
// sources share and the tests do not check are in namespace render_internal.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/render/render.h"
#include "bench/strategy_result.h"

namespace remat::bench {

// ---- drawing (svg.cpp; the category stack and phases, timeline.cpp) ----

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

// ---- tables (table.cpp; the sections' tables, results_table.cpp, sweep_tables.cpp,
// offload_tables.cpp) ----

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

// ---- shared by the package's sources only ----
namespace render_internal {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// svg.cpp: SVG elements and axes.

// A coordinate or length, one decimal (keeps the files small).
std::string num(double v);
// A tick label: as many decimals as the tick spacing needs (0.25 needs two).
std::string tick_text(double v, const Axis& axis);
// The smallest of 1, 2, 2.5, 5 times a power of ten that cuts `span` into at most target + 1.5 steps.
double nice_step(double span, int target_ticks);
// Ticks every 1, 2, 2.5 or 5 times a power of ten; the range widened to whole ticks unless `exact`.
Axis make_axis(double lo, double hi, int target_ticks, bool exact = false);
// Bytes in MiB, or GiB from 8 GiB up (a GPT-2-XL dry run).
struct Unit {
  double bytes;
  const char* name;
};
Unit unit_for(double max_bytes);
std::string bytes_text(int64_t bytes, const Unit& u);
std::string svg_open(double w, double h);
std::string text(double x, double y, const std::string& t, const std::string& attrs = "");
std::string line(double x1, double y1, double x2, double y2, const std::string& attrs);
std::string rect(const Box& b, const std::string& attrs);
// "GPT 2 layers, d_model 64, seq 32, batch 2 (cpu, f32)": the pictures' subtitle.
std::string model_text(const RunConfig& cfg);
// Axis lines, grid, ticks and labels of a plot area.
std::string axes(const Box& area, const Axis& xa, const Axis& ya, const std::string& xlabel,
                 const std::string& ylabel);

// The planned frontiers' colours: keep/recompute green, keep/recompute/offload purple.
constexpr const char* kFrontierColor = "#2ca02c";
constexpr const char* kOffloadColor = "#9467bd";
// A planned frontier: a line through `points` (sorted by y, bottom to top: the plans in order of
// peak) as the polyline with `id` (dashed where `dashes` says, so that a line drawn over another
// leaves it visible), a square at each point; its markers and small boxes along its
// segments go into `obstacles` (labels keep off them).
std::string frontier_line(const std::vector<std::pair<double, double>>& points, const std::string& id,
                          const std::string& color, std::vector<Box>* obstacles, const std::string& dashes = "");
// `frontier`'s points in order of `peak` (then of budget), as frontier_line draws them.
std::vector<const StrategyResult*> by_peak(const std::vector<StrategyResult>& frontier,
                                           int64_t (*peak)(const StrategyResult&));

// table.cpp: cells.

// printf of one double.
std::string fmt(const char* f, double v);
// The result named `name`, if any.
const StrategyResult* find(const std::vector<StrategyResult>& rs, const std::string& name);
bool any_measured(const std::vector<StrategyResult>& results);
bool any_planned(const std::vector<StrategyResult>& results);
// The bytes of category `c` in `m` (0 where absent).
int64_t category(const std::map<MemoryCategory, int64_t>& m, MemoryCategory c);
// "yes"/"NO" for a planned row, "-" for the others.
std::string fits_text(const StrategyResult& r);
std::string mib(int64_t bytes, const char* f = "%.1f");
// The sweep point planned at exactly `budget`, if any.
const StrategyResult* planned_at(const std::vector<StrategyResult>& sweep, int64_t budget);

// results_table.cpp: lines above the table: the model, its FLOPs, the reference formula, how the
// dry runs counted and how long they took (the terminal's and the report's).
std::vector<std::string> report_preamble(const RunConfig& cfg, const std::vector<StrategyResult>& results);

}  // namespace render_internal

}  // namespace remat::bench
