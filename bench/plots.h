// The pictures of bench/memory_vs_recompute, as SVG (no PyTorch counterpart; the timeline is in
// the spirit of torch.cuda.memory._record_memory_history's viewer and of MemTracker's
// per-category figures):
//   pareto_svg    peak memory against step time (or recomputed FLOPs), one labelled point per
//                 strategy, the Pareto front, and the planned frontier: a line through the points
//                 plan_checkpointing made for a sweep of budgets (--sweep)
//   timeline_svg  one step's memory as a stacked area by category over the event sequence, the
//                 phases (forward, backward, recompute, optimizer) shaded behind, the dry run's
//                 predicted total drawn dashed over the measured one
// and the pieces they are made of, exposed for tests: label placement, axes, the category stack.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/strategy_result.h"

namespace remat::bench {

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

// What a Pareto chart puts across: the median step time, or the FLOPs recomputed per step.
enum class ParetoX { kStepTime, kRecomputedFlops };
// `frontier`: planned points (measured), drawn as a green line through them in order of peak,
// as the polyline with id='planned-frontier'.
std::string pareto_svg(const RunConfig& cfg, const std::vector<StrategyResult>& results,
                       const std::vector<StrategyResult>& frontier = {}, ParetoX x = ParetoX::kStepTime);
// The measured timeline's stack with the predicted total dashed over it; after --dry-run (no
// measurement) the predicted timeline's stack.
std::string timeline_svg(const RunConfig& cfg, const StrategyResult& r);

}  // namespace remat::bench
