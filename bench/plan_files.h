// Plan files in bench/memory_vs_recompute (no PyTorch counterpart; the file is read by
// python/remat_plan for PyTorch's SAC): --export-plan FILE writes the plan of --budget (also a
// plan for cuda made by --dry-run --device cuda, without a GPU), --plan FILE trains under a saved
// plan, checked against this run's model by a dry run, with its predicted and measured peaks.
// The format: docs/plan_format.md.
//
//   PlanFile p = load_plan_file("plan.json", shape, options, "cpu");
//   StrategyResult r;
//   record_measured(run_training_steps(planned_strategy(p.applied, "plan-file"), shape, Device{kCPU}, 3), 1, &r);
//   record_plan(p.applied, &r);   // r.measured_plan_peak() == p.file.predicted_peak_bytes
#pragma once

#include <string>

#include "bench/planning.h"

namespace remat::bench {

// --export-plan needs --budget (the plan it writes). Throws remat::Error naming the flags.
void check_plan_file_args(const PlanningArgs& args);
// Writes `plan` to `path` with the activation bytes the dry run of its row predicted (`r`, the
// `act` column) and says so on stdout.
void export_plan(CheckpointPlan plan, const StrategyResult& r, const std::string& path);
// --plan FILE: the plan read from `path` (`file`), made for the device the dry runs count like
// (`meta_accounting`: cpu or cuda), and applied to the benchmark's step on `shape` (`applied`: a
// dry run checks every region and call, and predicts its peaks). Errors are CheckpointErrors
// prefixed with "--plan FILE: ".
struct PlanFile {
  CheckpointPlan file, applied;
};
PlanFile load_plan_file(const std::string& path, const ModelShape& shape, const TrainingOptions& options,
                        const std::string& meta_accounting);
// "--plan FILE: ..." : the file's predicted peak and activation bytes, the dry run's on this
// step, and what the row measured.
std::string plan_file_line(const std::string& path, const PlanFile& plan, const StrategyResult& r);

}  // namespace remat::bench
