// The output of bench/memory_vs_recompute, rendered (no PyTorch counterpart; the timeline is in
// the spirit of torch.cuda.memory._record_memory_history's viewer and of MemTracker's
// per-category figures): the table of predicted beside measured memory, the JSON results, the SVG
// pictures and one self-contained HTML report with the tables and every picture inline. This is
// the package's interface; how it draws (axes, label placement, text widths, colours) is internal
// (internal.h).
#pragma once

#include <string>
#include <vector>

#include "bench/strategy_result.h"

namespace remat::bench {

// ---- pictures (plots.cpp) ----

// What a Pareto chart puts across: the median step time, or the FLOPs recomputed per step.
enum class ParetoX { kStepTime, kRecomputedFlops };
// Peak memory against step time (or recomputed FLOPs), one labelled point per strategy, the
// Pareto front, and the planned frontier: `frontier`'s planned points (measured; --sweep), drawn
// as a green line through them in order of peak, as the polyline with id='planned-frontier'.
std::string pareto_svg(const RunConfig& cfg, const std::vector<StrategyResult>& results,
                       const std::vector<StrategyResult>& frontier = {}, ParetoX x = ParetoX::kStepTime);
// One step's memory as a stacked area by category over the event sequence, the phases (forward,
// backward, recompute, optimizer) shaded behind, the dry run's predicted total drawn dashed over
// the measured one; after --dry-run (no measurement) the predicted timeline's stack.
std::string timeline_svg(const RunConfig& cfg, const StrategyResult& r);

// ---- tables, JSON and the report (report.cpp) ----

// A table as cells, rendered as aligned text (the terminal) or as HTML (the report).
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // what the columns mean
};

// Predicted beside measured peak and activation memory with their ratios, step time, recompute;
// after --dry-run the predictions alone, with the bytes at the peak by category.
Table result_table(const RunConfig& cfg, const std::vector<StrategyResult>& results);
// The preamble (the model, its FLOPs, the reference formula, how the dry runs counted and how
// long they took), the table and its notes, and the step times measured in turn, as printed.
void print_table(const RunConfig& cfg, const std::vector<StrategyResult>& results);
// The planned row's planning: "planned for --budget 60.0 MiB (62914560 bytes) in 0.84 s, 37 dry runs: ...".
std::string planning_line(const StrategyResult& planned);
// The sweep's table (--sweep, --sweep-at-strategies: one row per plan) and the comparison of each
// measured fixed strategy with the plan made for its own peak (where there is one), as printed.
void print_sweep(const std::vector<StrategyResult>& results, const std::vector<StrategyResult>& sweep);
// Side by side with another framework's results, with ratios.
void print_comparison(const RunConfig& ours_cfg, const std::vector<StrategyResult>& ours, const RunConfig& theirs_cfg,
                      const std::vector<StrategyResult>& theirs);

// `sweep`: the planned frontier's points, written under "sweep" (none: no key).
std::string to_json(const RunConfig& cfg, const std::vector<StrategyResult>& results,
                    const std::vector<StrategyResult>& sweep = {});
// Reads a results file (remat's or bench/torch_reference.py's).
void from_json(const std::string& text, RunConfig* cfg, std::vector<StrategyResult>* results);

// One HTML page with no external resource: the preamble, the table, the Pareto charts (when
// something was measured; with the planned frontier through `sweep`), the sweep's tables and
// every strategy's timeline, each SVG inline exactly as written to its own file.
std::string report_html(const RunConfig& cfg, const std::vector<StrategyResult>& results,
                        const std::vector<StrategyResult>& sweep = {});

}  // namespace remat::bench
