// Plan files in bench/memory_vs_recompute (see plan_files.h).
#include "bench/plan_files.h"

#include <cctype>
#include <cstdio>
#include <dirent.h>
#include <sys/stat.h>
#include <vector>

namespace remat::bench {

namespace {

// plan_<digits>.json: a file sweep_plan_path names.
bool is_sweep_plan_name(const std::string& name) {
  const std::string prefix = "plan_", suffix = ".json";
  if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  for (size_t i = prefix.size(); i < name.size() - suffix.size(); ++i)
    if (std::isdigit(static_cast<unsigned char>(name[i])) == 0) return false;
  return true;
}

void remove_earlier_sweep_plans(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> earlier;
  while (const dirent* e = readdir(d))
    if (is_sweep_plan_name(e->d_name)) earlier.emplace_back(e->d_name);
  closedir(d);
  for (const std::string& name : earlier) std::remove((dir + "/" + name).c_str());
}

}  // namespace

void check_plan_file_args(const PlanningArgs& args) {
  if (args.sweep > 0 && !args.plan_file.empty()) {
    REMAT_CHECK(args.export_plan.empty(), "--plan ", args.plan_file, " with --sweep ", args.sweep, " runs the plans "
                "an earlier --export-plan wrote there; not with --export-plan ", args.export_plan, " too");
    REMAT_CHECK(!args.sweep_at_strategies, "--plan ", args.plan_file, " with --sweep ", args.sweep, " runs the plans "
                "of the sweep's budgets; not with --sweep-at-strategies (the strategies' measured peaks differ run to "
                "run)");
    struct stat st {};
    if (::stat(args.plan_file.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      throw UsageError("--plan " + args.plan_file + " with --sweep " + std::to_string(args.sweep) + ": expected the "
                       "folder that --sweep N --export-plan DIR writes, but it is not a folder");
  }
  if (args.export_plan.empty()) return;
  if (args.sweep == 0 && args.budget_bytes == 0 && args.sweep_at_strategies)
    throw Error("--export-plan " + args.export_plan + " with --sweep-at-strategies alone: it writes the plan of "
                "--budget SIZE (a file) or one plan per budget of --sweep N (a folder); give --budget or --sweep too");
  if (args.sweep == 0 && args.budget_bytes == 0)
    throw Error("--export-plan " + args.export_plan + " writes the plan made for --budget SIZE: give --budget too "
                "(or --sweep N, and a folder for one plan per budget)");
  if (args.sweep == 0) return;
  if (args.budget_bytes > 0)
    throw Error("--export-plan " + args.export_plan + " with --sweep " + std::to_string(args.sweep) +
                " is a folder for the sweep's plans; --budget " + byte_size_text(args.budget_bytes) +
                "'s plan is one file: export it in a run without --sweep");
  check_output_dir(args.export_plan, "--export-plan (a folder with --sweep)");  // engine/core/file_io.h
  remove_earlier_sweep_plans(args.export_plan);
}

std::string sweep_plan_path(const std::string& dir, int64_t budget_bytes) {
  return dir + "/plan_" + std::to_string(budget_bytes) + ".json";
}

void check_sweep_plan_files(const PlanningArgs& args, const std::vector<int64_t>& budgets) {
  if (args.plan_file.empty() || args.sweep == 0) return;
  for (const int64_t budget : budgets) {
    const std::string path = sweep_plan_path(args.plan_file, budget);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      throw CheckpointError("--plan " + args.plan_file + ": no plan for the sweep's budget of " + std::to_string(budget) +
                            " bytes (" + path + "); write them with --sweep " + std::to_string(args.sweep) +
                            " --export-plan " + args.plan_file + " and the same flags");
  }
}

CheckpointPlan sweep_plan(const ModelShape& shape, const TrainingOptions& options, int64_t budget_bytes, Device device,
                          const PlanningArgs& args, const std::string& meta_accounting) {
  if (args.plan_file.empty()) return plan_budget(shape, options, budget_bytes, device, "--sweep", args);
  check_sweep_plan_files(args, {budget_bytes});
  const std::string path = sweep_plan_path(args.plan_file, budget_bytes);
  const PlanFile p = load_plan_file(path, shape, options, meta_accounting);
  if (p.file.budget_bytes != budget_bytes)
    throw CheckpointError("--plan " + path + ": the plan is for a budget of " + std::to_string(p.file.budget_bytes) +
                          " bytes, not the sweep's " + std::to_string(budget_bytes));
  return p.applied;
}

void export_plan(CheckpointPlan plan, const StrategyResult& r, const std::string& path) {
  plan.predicted_activation_bytes = r.predicted.activation_bytes;
  plan.save(path);
  std::printf("wrote the plan for %s (%s, predicted peak %lld bytes of %s memory) to %s\n",
              byte_size_text(plan.budget_bytes).c_str(), plan.device().is_cuda() ? "cuda" : "cpu",
              static_cast<long long>(plan.predicted_peak_bytes), toString(plan.counter), path.c_str());
}

PlanFile load_plan_file(const std::string& path, const ModelShape& shape, const TrainingOptions& options,
                        const std::string& meta_accounting) {
  try {
    const CheckpointPlan file = CheckpointPlan::load(path);
    const std::string device = file.device().is_cuda() ? "cuda" : "cpu";
    if (device != meta_accounting) {
      throw CheckpointError("the plan was made for " + device + ", but this run's dry runs count like " +
                            meta_accounting + " (--device " + device + ", or --meta-accounting " + device +
                            " with --dry-run)");
    }
    CheckpointPlan applied = file.applied_to(benchmark_step(shape, options));
    applied.predicted_activation_bytes = file.predicted_activation_bytes;
    return PlanFile{file, applied};
  } catch (const CheckpointError& e) {
    throw CheckpointError("--plan " + path + ": " + e.what());
  }
}

std::string plan_file_line(const std::string& path, const PlanFile& plan, const StrategyResult& r) {
  const CheckpointPlan& file = plan.file;
  std::string line = "--plan " + path + ": budget " + std::to_string(file.budget_bytes) + " bytes of " +
                     toString(file.counter) + " memory; predicted peak " + std::to_string(file.predicted_peak_bytes) +
                     " bytes (this step's dry run under the plan: " + std::to_string(r.plan_predicted_peak_bytes) +
                     "), activations " + std::to_string(file.predicted_activation_bytes) + " bytes (" +
                     std::to_string(r.predicted.activation_bytes) + ")";
  if (r.measured.known) {
    line += "; measured peak " + std::to_string(r.measured_plan_peak()) + " bytes, activations " +
            std::to_string(r.measured.activation_bytes) + " bytes";
  }
  return line;
}

}  // namespace remat::bench
