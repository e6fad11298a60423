// Output of bench/memory_vs_recompute: the table, the JSON results, and the SVG plots.
#pragma once

#include <string>
#include <vector>

#include "bench/activation_model.h"

namespace remat::bench {

struct StrategyResult {
  std::string name, description;
  bool reentrant = false;
  int64_t peak_bytes = 0;        // max_memory_allocated over a step
  int64_t activation_bytes = 0;  // allocated after forward minus before forward
  double predicted_bytes = 0;    // activation_model.h
  std::vector<double> step_ms;   // measured steps (after warm-up)
  double median_ms = 0;
  double recomputed_flops_per_step = 0;
  double replayed_per_step = 0;
  double recomputed_calls_per_step = 0;
  double final_loss = 0;
  std::vector<int64_t> timeline;  // allocated bytes after each op call of one step
};

struct RunConfig {
  ModelShape shape;
  std::string device = "cpu", dtype = "f32";
  int64_t steps = 5, warmup = 2;
  double model_flops_per_step = 0;  // forward + backward, matmuls only
  double forward_flops = 0;
  std::string framework = "remat";
  int64_t threads = 0;  // intra-op threads of the run (0: not recorded)
  std::string clock = "wall";  // step times: "wall" clock or process "cpu" time
};

void print_table(const RunConfig& cfg, const std::vector<StrategyResult>& results);
std::string to_json(const RunConfig& cfg, const std::vector<StrategyResult>& results);
// Reads a results file (remat's or bench/torch_reference.py's).
void from_json(const std::string& text, RunConfig* cfg, std::vector<StrategyResult>* results);
// Memory against step time, one labelled point per strategy, the Pareto front drawn.
std::string pareto_svg(const RunConfig& cfg, const std::vector<StrategyResult>& results);
// Allocated bytes over the op sequence of one step.
std::string timeline_svg(const RunConfig& cfg, const StrategyResult& r);
// Side by side with another framework's results, with ratios.
void print_comparison(const RunConfig& ours_cfg, const std::vector<StrategyResult>& ours, const RunConfig& theirs_cfg,
                      const std::vector<StrategyResult>& theirs);

}  // namespace remat::bench
