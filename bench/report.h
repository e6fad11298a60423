// Output of bench/memory_vs_recompute (no PyTorch counterpart): the table of predicted beside
// measured memory, the JSON results, and one self-contained HTML report with the tables and
// every picture (plots.h) inline.
#pragma once

#include <string>
#include <vector>

#include "bench/strategy_result.h"

namespace remat::bench {

// A table as cells, rendered as aligned text (the terminal) or as HTML (the report).
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;  // what the columns mean
};

// measured / predicted with three decimals: "1.000" only when the two are equal to the byte
// ("~1.000" when they differ by less than the rounding), "-" when nothing was predicted.
std::string ratio_text(int64_t measured, int64_t predicted);

// Lines above the table: the model, its FLOPs, the reference formula, how the dry runs counted
// and how long they took.
std::vector<std::string> report_preamble(const RunConfig& cfg, const std::vector<StrategyResult>& results);
// Predicted beside measured peak and activation memory with their ratios, step time, recompute;
// after --dry-run the predictions alone, with the bytes at the peak by category.
Table result_table(const RunConfig& cfg, const std::vector<StrategyResult>& results);
std::string table_text(const Table& t);
std::string table_html(const Table& t);
// The preamble, the table and its notes, as printed.
void print_table(const RunConfig& cfg, const std::vector<StrategyResult>& results);

// The step times measured with every strategy one step in turn (StrategyResult::interleaved_ms):
// strategy, median, overhead against 'none' (when run), and the median of its own run beside it.
// No rows when nothing was measured that way.
Table interleaved_table(const std::vector<StrategyResult>& results);
// The planned row's planning: "planned for --budget 60.0 MiB (62914560 bytes) in 0.84 s, 37 dry runs: ...".
std::string planning_line(const StrategyResult& planned);
// The sweep (--sweep, --sweep-at-strategies), one row per plan: budget, the plan's predicted peak,
// the measured peak, fits, recomputed FLOPs, median step time, planning time.
Table sweep_table(const std::vector<StrategyResult>& sweep);
// Each measured fixed strategy beside the plan made for its own measured peak: step times and
// their ratio (the plan should be no slower: ratio <= 1.03), recomputed FLOPs.
Table comparison_table(const std::vector<StrategyResult>& results, const std::vector<StrategyResult>& sweep);
// Both tables and their notes, as printed (the comparison only where there is one).
void print_sweep(const std::vector<StrategyResult>& results, const std::vector<StrategyResult>& sweep);

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

// Side by side with another framework's results, with ratios.
void print_comparison(const RunConfig& ours_cfg, const std::vector<StrategyResult>& ours, const RunConfig& theirs_cfg,
                      const std::vector<StrategyResult>& theirs);

}  // namespace remat::bench
