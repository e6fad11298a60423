// Plan files in bench/memory_vs_recompute (see plan_files.h).
#include "bench/plan_files.h"

#include <cstdio>

namespace remat::bench {

void check_plan_file_args(const PlanningArgs& args) {
  if (!args.export_plan.empty() && args.budget_bytes == 0)
    throw Error("--export-plan " + args.export_plan + " writes the plan made for --budget SIZE: give --budget too");
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
