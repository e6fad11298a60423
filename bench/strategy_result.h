// What memory_vs_recompute knows of one checkpointing strategy (no PyTorch counterpart): the
// figures its training steps measured on the device beside those a dry run on the Meta device
// predicted for the same steps, and the run's configuration. Filled from StepRecords
// (training_step.h); read by report.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/activation_model.h"
#include "bench/training_step.h"

namespace remat::bench {

// One step's memory events as the tracker recorded them (measured or dry run).
struct StepTimeline {
  int64_t step = -1;                                    // the step's index, warm-up included
  std::map<MemoryCategory, int64_t> start_by_category;  // live bytes when the step began
  std::vector<MemoryEvent> events;
  bool empty() const { return events.empty(); }
};

// The memory of the steps after warm-up, taken the same way from a run on the device and from a
// dry run of the same steps.
struct StepsMemory {
  bool known = false;                         // false: not run (a dry run leaves `measured` unknown)
  int64_t peak_bytes = 0;                     // max_memory_allocated over a step, the highest of the steps
  int64_t activation_bytes = 0;               // allocated after forward minus before forward, the highest
  int64_t peak_reserved_bytes = 0;            // max_memory_reserved over a step, the highest of the steps
  int64_t segments = 0;                       // memory_segments after a step, the most
  std::map<MemoryCategory, int64_t> at_peak;  // bytes by category at the highest peak
  StepTimeline timeline;                      // the last step (when timelines are kept)
};

struct StrategyResult {
  std::string name, description;
  bool reentrant = false;

  StepsMemory measured;        // on the device (not after --dry-run)
  StepsMemory predicted;       // by a dry run on Device{kMeta}
  double dry_run_seconds = 0;  // wall time of the whole dry run (warm-up steps included)

  // Measured steps only.
  std::vector<double> step_ms;
  double median_ms = 0;
  // The median step time when every strategy of the run took one step in turn (a slow spell of a
  // shared machine then hits all alike; interleaved_step_seconds); 0: not measured.
  double interleaved_ms = 0;
  // `--beside`: PyTorch's median step time for the same strategy, its step taken right after each of
  // remat's in that timing (bench/step_peer.h); 0: not measured.
  double beside_ms = 0;
  double final_loss = 0;

  // Recompute accounting per step, from the measured steps (or the dry run's, which count the same).
  double recomputed_flops_per_step = 0;
  double replayed_per_step = 0;
  double recomputed_calls_per_step = 0;

  // A strategy plan_checkpointing made (--budget, --sweep): the budget it was planned for and
  // what the planner said; 0 for the fixed strategies.
  int64_t budget_bytes = 0;
  int64_t plan_predicted_peak_bytes = 0;  // CheckpointPlan::predicted_peak_bytes
  std::string plan_counter = "allocated";  // what that peak and the budget bound (CheckpointPlan::counter)
  double plan_recompute_flops = 0;        // CheckpointPlan::recompute_flops (per step)
  double plan_overhead_seconds = 0;       // CheckpointPlan::predicted_overhead_seconds (per step: recompute + exposed transfer)
  double plan_recompute_seconds = 0;      // CheckpointPlan::predicted_recompute_seconds (its recompute part)
  double planning_seconds = 0;            // wall time of plan_checkpointing
  int64_t planning_dry_runs = 0;
  // A plan that may offload (--offload): CheckpointPlan::host_budget_bytes (0: a keep/recompute
  // plan), predicted_host_peak_bytes, offloaded_bytes, offloaded.size(), predicted_transfer_seconds
  // (modeled; in plan_overhead_seconds) and host_link_bandwidth.
  int64_t plan_host_budget_bytes = 0;
  int64_t plan_host_peak_bytes = 0;
  int64_t plan_offloaded_bytes = 0;
  int64_t plan_offloaded_calls = 0;
  double plan_transfer_seconds = 0;
  double plan_host_link_bandwidth = 0;
  std::string at_strategy;                // planned at this fixed strategy's measured peak (--sweep-at-strategies)
  // --sweep-at-strategies: the plan's and each such strategy's step times measured alternately,
  // step by step in one process (interleaved_step_seconds), medians.
  struct PairedTiming {
    std::string strategy;
    double strategy_ms = 0, planned_ms = 0;
    int64_t rounds = 0;
  };
  std::vector<PairedTiming> paired;

  bool planned() const { return budget_bytes > 0; }
  // The measured peak of what the plan's budget bounds: max_memory_reserved for a plan of reserved
  // bytes (CUDA's default), else max_memory_allocated.
  int64_t measured_plan_peak() const {
    return plan_counter == "reserved" ? measured.peak_reserved_bytes : measured.peak_bytes;
  }
  // That peak (measured, or the plan's prediction when nothing was measured) is within the budget.
  bool fits() const { return (measured.known ? measured_plan_peak() : plan_predicted_peak_bytes) <= budget_bytes; }
};

struct RunConfig {
  ModelShape shape;
  std::string device = "cpu", dtype = "f32";
  std::string attention = "math";  // the attention core: "math" (the composite) or "sdpa" (the fused op)
  int64_t steps = 5, warmup = 2;
  double model_flops_per_step = 0;  // forward + backward, matmuls only
  double forward_flops = 0;
  std::string framework = "remat";
  bool dry_run = false;                 // nothing measured: predictions only
  std::string meta_accounting = "cpu";  // whose allocator the dry runs counted like (cpu, cuda)
  int64_t threads = 0;                  // intra-op threads of the run (0: not recorded)
  std::string clock = "wall";           // step times: "wall" clock or process "cpu" time
  double fma_peak_gflops = 0;           // FP32 FMA peak measured in the same run (0: not measured)
  int64_t offload_bytes = 0;            // --offload: the host memory the offload plans could use (0: none)
  std::string host_link_source;         // --offload: where the link's bandwidth came from (host_link_bandwidth_source)
  double host_link_datasheet = 0;       // --offload: the documented figure the emulated device is priced at (bytes/s)
};

// The median of step times (the upper one of an even count, as every table here reads it).
double median_of(std::vector<double> values);
// Fills the measured figures from the records of all steps (the first `warmup` are left out).
void record_measured(const std::vector<StepRecord>& steps, int64_t warmup, StrategyResult* r);
// Fills the predicted figures from a dry run's records of the same steps.
void record_predicted(const std::vector<StepRecord>& steps, int64_t warmup, double seconds, StrategyResult* r);

}  // namespace remat::bench
