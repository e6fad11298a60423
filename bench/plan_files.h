// Plan files in bench/memory_vs_recompute (no PyTorch counterpart; the file is read by
// python/remat_plan for PyTorch's SAC): --export-plan FILE writes the plan of --budget (also a
// plan for cuda made by --dry-run --device cuda, without a GPU), --sweep N --export-plan DIR one
// file per sweep budget (DIR/plan_<budget bytes>.json), read back by --sweep N --plan DIR; --plan
// FILE trains under a saved plan,
// checked against this run's model by a dry run, with its predicted and measured peaks.
// The format: docs/plan_format.md.
//
//   PlanFile p = load_plan_file("plan.json", shape, options, "cpu");
//   StrategyResult r;
//   record_measured(run_training_steps(planned_strategy(p.applied, "plan-file"), shape, Device{kCPU}, 3), 1, &r);
//   record_plan(p.applied, &r);   // r.measured_plan_peak() == p.file.predicted_peak_bytes
#pragma once

#include <string>
#include <vector>

#include "bench/planning.h"

namespace remat::bench {

// --export-plan needs --budget (FILE: the plan it writes) or --sweep N (DIR: a folder for one plan
// per sweep budget, not with --budget). With --sweep N, --plan DIR is the folder such a run wrote
// (not with --export-plan or --sweep-at-strategies, whose budgets differ run to run). Throws
// remat::Error naming the flags. With --sweep N it
// makes DIR if it is missing (a folder this process can write into, else UsageError naming
// --export-plan and the path) and removes an earlier run's plan_<digits>.json files from it, so
// that DIR holds this sweep's plans alone (torch_reference.py --plan DIR runs every *.json there).
void check_plan_file_args(const PlanningArgs& args);
// A sweep plan's file in --export-plan DIR: "DIR/plan_<budget bytes>.json".
std::string sweep_plan_path(const std::string& dir, int64_t budget_bytes);
// A sweep budget's plan: with --plan DIR (and --sweep N) the one an earlier --sweep N --export-plan
// DIR wrote for it, loaded as load_plan_file does (`applied`), so that remat runs the very plan
// PyTorch ran (the planner, timing calls on a busy machine, may choose another one run to run);
// a budget with no file there, or a file planned for another budget, throws CheckpointError naming
// both. Without --plan: plan_budget(..., "--sweep", args).
// With --sweep N --plan DIR: every budget's file is there, else the CheckpointError above (before
// anything runs).
void check_sweep_plan_files(const PlanningArgs& args, const std::vector<int64_t>& budgets);
CheckpointPlan sweep_plan(const ModelShape& shape, const TrainingOptions& options, int64_t budget_bytes, Device device,
                          const PlanningArgs& args, const std::string& meta_accounting);
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
