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

// ---- pictures (pareto.cpp, modeled_cost.cpp, timeline.cpp) ----

// What a Pareto chart puts across: the median step time, or the FLOPs recomputed per step.
enum class ParetoX { kStepTime, kRecomputedFlops };
// Peak memory against step time (or recomputed FLOPs), one labelled point per strategy, the
// Pareto front, and the planned frontier: `frontier`'s planned points (measured; --sweep), drawn
// as a green line through them in order of peak, as the polyline with id='planned-frontier';
// `offload_frontier`'s (--offload: the plans that may also offload, measured likewise) beside it
// as a purple line, id='planned-frontier-offload', each with its legend line.
std::string pareto_svg(const RunConfig& cfg, const std::vector<StrategyResult>& results,
                       const std::vector<StrategyResult>& frontier = {}, ParetoX x = ParetoX::kStepTime,
                       const std::vector<StrategyResult>& offload_frontier = {});
// --offload: the two frontiers by the planner's figures alone, so also after --dry-run: each
// plan's predicted peak against its modeled step cost (recompute + exposed transfer,
// StrategyResult::plan_overhead_seconds), the keep/recompute plans as id='planned-frontier', those
// that may offload as id='planned-frontier-offload', captioned with offload_caveat(cfg).
std::string modeled_cost_svg(const RunConfig& cfg, const std::vector<StrategyResult>& frontier,
                             const std::vector<StrategyResult>& offload_frontier);
// One step's memory as a stacked area by category over the event sequence, the phases (forward,
// backward, recompute, optimizer) shaded behind, the dry run's predicted total drawn dashed over
// the measured one; after --dry-run (no measurement) the predicted timeline's stack.
std::string timeline_svg(const RunConfig& cfg, const StrategyResult& r);

// ---- tables, JSON and the report (table.cpp, results_table.cpp, sweep_tables.cpp, offload_tables.cpp,
// plan_comparison.cpp, json.cpp, report.cpp) ----

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
// --offload: the two frontiers at each budget (offload_table, internal.h) under a heading with
// offload_caveat(cfg), as printed; nothing when `offload` is empty.
void print_offload(const RunConfig& cfg, const std::vector<StrategyResult>& sweep,
                   const std::vector<StrategyResult>& offload);
// What the offload figures are: "modeled, not measured: the emulated device has no real link" on
// the emulated device, "modeled, not measured: a dry run moves no bytes" after --dry-run, else
// the transfers modeled at the planner's link bandwidth beside measured peaks and step times.
std::string offload_caveat(const RunConfig& cfg);
// Side by side with another framework's results, with ratios.
void print_comparison(const RunConfig& ours_cfg, const std::vector<StrategyResult>& ours, const RunConfig& theirs_cfg,
                      const std::vector<StrategyResult>& theirs);

// --compare with --sweep: each sweep point (`ours`, a keep/recompute plan) beside the row of
// another framework's results that ran the plan exported for its budget (`theirs`,
// bench/torch_reference.py --plan: a row with budget_bytes), matched by budget bytes; null:
// not run there. `notes`: one line for each of their plan rows whose budget is not a sweep
// budget, and for each budget they ran twice (the first row is compared).
struct PlanMatch {
  const StrategyResult* ours = nullptr;
  const StrategyResult* theirs = nullptr;
};
struct PlanMatches {
  std::vector<PlanMatch> rows;  // in the sweep's order
  std::vector<std::string> notes;
};
PlanMatches match_plans(const std::vector<StrategyResult>& sweep, const std::vector<StrategyResult>& theirs);
// A row per sweep budget: budget, remat's predicted and measured activation bytes, theirs measured,
// theirs / remat's prediction, both median step times, and whether their plan file predicted the
// same bytes ("same"; else its predicted activation bytes). "not run" where they have no row.
Table plan_comparison_table(const std::vector<StrategyResult>& sweep, const std::vector<StrategyResult>& theirs);
// The table, its notes and match_plans' notes, as printed; with no sweep, one line when they ran
// plans (to be compared with --sweep), else nothing.
void print_plan_comparison(const RunConfig& ours_cfg, const std::vector<StrategyResult>& sweep,
                           const RunConfig& theirs_cfg, const std::vector<StrategyResult>& theirs);

// `sweep`: the planned frontier's points, written under "sweep" (none: no key). `offload` (--offload):
// under "offload", the host budget, offload_caveat(cfg), the offload plans' points ("sweep") and
// one row per budget comparing the two plans ("rows": device budget, each plan's predicted peak,
// recompute, transfer and modeled cost seconds, host peak and offloaded bytes).
// A figure that is NaN or Inf, which JSON cannot hold, is refused: Error "results.json:
// results[0].final_loss is nan, ...", and nothing is written.
std::string to_json(const RunConfig& cfg, const std::vector<StrategyResult>& results,
                    const std::vector<StrategyResult>& sweep = {}, const std::vector<StrategyResult>& offload = {});
// Reads a results file (remat's or bench/torch_reference.py's). Text that is not JSON, or a field
// missing or of another type (a null figure): Error "results.json: cannot read it: ...".
void from_json(const std::string& text, RunConfig* cfg, std::vector<StrategyResult>* results);

// One HTML page with no external resource: the preamble, the table, the Pareto charts (when
// something was measured; with the planned frontier through `sweep`), the sweep's tables and
// every strategy's timeline, each SVG inline exactly as written to its own file; with `offload`
// the offload frontier on the charts, its table and modeled_cost_svg.
std::string report_html(const RunConfig& cfg, const std::vector<StrategyResult>& results,
                        const std::vector<StrategyResult>& sweep = {}, const std::vector<StrategyResult>& offload = {});

}  // namespace remat::bench
