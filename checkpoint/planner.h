// A memory budget in, the fastest checkpointing plan that fits out. Counterparts:
// torch/_functorch/partitioners.py (activation_memory_budget, compiled graphs only, a fraction,
// no guarantee) and torch/distributed/_tools/sac_estimator.py + sac_ilp.py (estimates). remat
// plans in eager mode and exactly: every candidate plan is priced by a dry run on the Meta
// device, whose peak is the real step's peak to the byte.
//
//   PlannedStep step = [&](const PolicyFn& policy, Device device) {
//     nn::GPTConfig cfg;  cfg.options = TensorOptions().device(device);
//     nn::GPT model(cfg);
//     model.set_checkpointing(nn::ActivationCheckpointing::selective(policy));
//     optim::AdamW opt(model.parameters(), optim::AdamWOptions(3e-4));
//     auto [idx, targets] = batch_on(device);
//     model.forward(idx, targets).loss.backward();
//     opt.step();
//   };
//   CheckpointPlan plan = plan_checkpointing(step, PlannerOptions{40 << 20});
//   std::cout << plan.summary();          // what each region keeps and recomputes
//   step(plan.policy(), Device{kCPU});    // peaks at plan.predicted_peak_bytes, exactly
//
// How it plans. One profiling dry run (nothing kept) records every op call SAC sees in
// checkpointed regions, its output bytes and recompute cost (cost model below), and whether
// backward needs its output (a saved tensor shares its storage); the calls backward needs are
// the candidates. A call backward does not need can still be worth keeping: a rerun that
// recomputes a needed output recomputes the calls before it, unless SAC replays them. Keeping all of them reruns no region at all (a region whose saved tensors SAC
// kept is never rerun), so [recompute-all, keep-all] bounds the feasible peaks. The search:
// candidates by recompute cost saved per byte kept, the longest prefix that fits (binary search
// on the dry run's peak), then keep-sets by op (every call of some set of ops, as hand-made
// policies keep), then the Pareto front of a multiple-choice knapsack over the regions (each
// region's keep-sets priced from the profile: a rerun recomputes the calls up to its last needed
// output not kept, less the kept ones; binary search on the dry run's peak along the front), then
// whole-region completions, first-fit additions and one-for-one swaps, each priced by a dry run.
//
// A larger budget never costs more. The search runs at a ladder of budgets that the profile alone
// fixes: five rungs, evenly from the lowest feasible peak to just below keep-all's. Each rung's
// search starts from the cheapest keep-set known to fit it (the plan of the rung below); a
// keep-set priced once is not run again. The plan for a budget is the cheapest keep-set that fits
// it among all priced at the rungs up to the first at or above it: a larger budget chooses among
// more keep-sets under a looser bound, so its modelled cost is no higher, and the same budget
// always gives the same plan. The rungs share options.max_dry_runs. The result is verified by one
// more dry run.
//
// Offload, the third choice (host_budget_bytes > 0, CUDA only). Each candidate may also be moved to
// pinned host memory (MUST_CPU_OFFLOAD, checkpoint/selective.h): no recompute, and no device
// memory between its region's forward end and its prefetch one region early in backward, for a
// transfer each way priced at host_link_bandwidth, less what compute hides (the model in
// checkpoint/offload_cost.h: a copy to host hides behind the rest of its region's forward, the
// copy back behind the next region's backward). After the keep/recompute search at each rung,
// the offload phases (checkpoint/planner_offload.h) start from its keep-set; each choice is
// priced by a dry run, which counts the device and the host bytes exactly, and fits when both
// peaks are within their budgets. The plan is the cheapest, recompute plus exposed transfer, so it
// never costs more than the plan without a host budget. The transfer figure is modeled, never
// measured: on the emulated device, whose link is not real, it is the H200's PCIe 5.0 figure.
//
// Dry runs and threads (docs/dry_runs.md). Every dry run is a DryRun of its own
// (engine/core/dry_run.h): its Meta counters, storage observers and checkpoint_stats() are its
// own, so plans can be made in several threads at once, each equal to the plan made alone, and a
// real step in another thread is not disturbed. Every dry run must make the profiling run's calls
// (the same regions; per call the same op, scope, index and argument shapes), else
// CheckpointError names the dry run and the first call that differs. If the step throws, the
// thread's dispatch modes, grad mode, saved-tensor hooks and scope path are restored and its error
// re-raised with the dry run's number and phase added (a std::exception that is not a
// remat::Error comes back as a remat::Error with the original nested in it).
//
// Cost model (checkpoint/runtime_estimator.h): recomputing a call costs what a RuntimeEstimator
// says it takes on options.device. operator-level-cost-model (the default, deterministic):
// max(FLOPs / peak FLOP/s, bytes moved / bandwidth). operator-level-benchmark: each distinct call
// run and timed on the device once (the plan then follows this machine's kernels, e.g. a small
// matmul that reaches a fraction of the peak, an elementwise op held back by more than bandwidth).
// Views cost nothing in both.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/runtime_estimator.h"
#include "checkpoint/selective.h"

namespace remat {

// Which statistic a budget bounds: the bytes live tensors hold (memory_allocated), or what the
// allocator holds from the device (memory_reserved: on CUDA the caching allocator's segments,
// which is what makes a real job run out of memory).
enum class MemoryCounter { Allocated, Reserved };
const char* toString(MemoryCounter counter);

struct PlannerOptions {
  int64_t budget_bytes = 0;      // bound on the step's peak of `counter`, counted from its start
  Device device = Device{kCPU};  // the device whose speed the cost model assumes (and whose accounting: CUDA counts blocks)
  double peak_flops = 0;         // FLOP/s of the device; 0: default_machine_peaks (cost_model_defaults.h)
  double bandwidth = 0;          // bytes/s of the device; 0: likewise (on the CPU: measured once per process)
  // Bound on all of a plan's dry runs (the result is deterministic for the cost model); with a host
  // budget, the offload phases may make as many again (each search bounded apart, so that the
  // keep/recompute search runs as it would without one: offload never makes a plan dearer).
  int64_t max_dry_runs = 200;
  // How a recomputed call is priced: the roofline on peak_flops and bandwidth, or each call timed
  // on options.device (which must then be available: the step itself still runs on Meta only).
  EstimateMode estimate_mode = EstimateMode::kCostModel;
  // The estimator to price calls with, instead of one made from the fields above: share one
  // across plans so that a benchmark times each distinct call once (the plans then agree).
  std::shared_ptr<RuntimeEstimator> estimator;
  // The statistic budget_bytes bounds; default: Reserved on CUDA (max_memory_reserved, predicted
  // from an empty cache by the caching allocator's own block logic), Allocated elsewhere.
  // Reserved needs a CUDA device: the CPU allocator's reserved bytes are not predicted.
  std::optional<MemoryCounter> counter;
  // Offload, the third choice (checkpoint/selective.h's MUST_CPU_OFFLOAD): a bound on the pinned
  // host bytes the plan's offloaded outputs hold at once (max_offloaded_memory_allocated); 0, the
  // default, plans without offload. Needs a CUDA device (the CPU's tensors are in host memory).
  int64_t host_budget_bytes = 0;
  // Bytes/s each way between the device and pinned host memory, what a transfer is priced at;
  // 0: default_host_link_bandwidth(device) (checkpoint/cost_model_defaults.h).
  double host_link_bandwidth = 0;
};

struct CheckpointPlan {
  MemoryCounter counter = MemoryCounter::Allocated;  // what the peaks below are peaks of
  int64_t predicted_peak_bytes = 0;      // the dry run's peak under this plan (what the real step will show)
  int64_t predicted_allocated_peak_bytes = 0;  // its peak of memory_allocated (= the above for Allocated)
  int64_t predicted_reserved_peak_bytes = 0;   // its peak of memory_reserved (CUDA only; 0 on the CPU)
  int64_t recompute_all_peak_bytes = 0;  // the lowest peak any plan reaches (everything recomputable recomputed)
  int64_t keep_all_peak_bytes = 0;       // the peak when every output backward needs is kept (nothing recomputed)
  double recompute_flops = 0;            // FLOPs recomputed in one call of `step`, counted as checkpoint_stats() counts them
  // What the plan minimises: the estimator's price of that recompute on options.device, plus the
  // modeled transfer time of its offloads (predicted_transfer_seconds; 0 without offload).
  double predicted_overhead_seconds = 0;
  double predicted_recompute_seconds = 0;  // the recompute part of it
  EstimateMode estimate_mode = EstimateMode::kCostModel;  // how it was priced
  std::vector<std::string> kept;         // "scope / op / #index" of every op output the plan keeps
  // Those it offloads to pinned host memory (MUST_CPU_OFFLOAD; empty unless host_budget_bytes > 0).
  std::vector<std::string> offloaded;
  int64_t host_budget_bytes = 0;
  int64_t predicted_host_peak_bytes = 0;  // the dry run's peak of offloaded host bytes (max_offloaded_memory_allocated)
  int64_t offloaded_bytes = 0;            // bytes copied to host (and back) in one call of `step`
  // The modeled time of the offloads' transfers that compute does not hide (the transfer model in
  // checkpoint/offload_cost.h), at host_link_bandwidth bytes/s each way. Modeled, never measured.
  double predicted_transfer_seconds = 0;
  double host_link_bandwidth = 0;         // what the transfers were priced at
  // The modeled step overhead, recompute plus transfers: predicted_overhead_seconds.
  double predicted_cost_seconds() const { return predicted_overhead_seconds; }
  std::vector<std::string> candidates;   // every output backward needs, in the search's order (best value first)
  // Outputs backward does not need but a rerun recomputes on the way to one it does (attention's
  // scores before the softmax): keeping one replays it in the rerun instead. Best value first.
  std::vector<std::string> replay_candidates;
  int64_t budget_bytes = 0;
  int64_t dry_runs = 0;                  // dry runs the search made
  double planning_seconds = 0;           // wall time of plan_checkpointing

  // MUST_SAVE for kept outputs, MUST_CPU_OFFLOAD for offloaded ones, PREFER_RECOMPUTE for the
  // rest. Throws CheckpointError for a call the plan has never seen, one whose argument shapes
  // differ from what it was made for, or an offloaded call on a device that does not offload (the
  // CPU: the error names it).
  PolicyFn policy() const;
  std::string summary() const;  // per region: bytes kept / recomputed, cost
  // Whether what the prediction assumed holds on `device` now: for a plan of reserved bytes, an
  // empty cache (no segment held, no tensor alive) on the device it was made for. "" when it
  // holds, else what differs (then empty_cache() with no tensors alive, or plan for Allocated).
  std::string check(Device device) const;
  // The device the plan was made for (PlannerOptions::device; a file's "device").
  Device device() const;
  // The same model, another keep-set (any subset of `candidates` and `replay_candidates`), priced by one dry run: for
  // comparing a hand-made choice with the planner's. Ignores the budget.
  CheckpointPlan with_kept(const std::function<void(const PolicyFn&, Device)>& step,
                           const std::vector<std::string>& kept) const;
  // Likewise with `offloaded` (candidates too, none also in `kept`) offloaded; needs a plan made for
  // a CUDA device.
  CheckpointPlan with_kept(const std::function<void(const PolicyFn&, Device)>& step,
                           const std::vector<std::string>& kept, const std::vector<std::string>& offloaded) const;

  // What the step's forward leaves allocated: allocated after forward minus allocated before it
  // (the benchmark's `act` column). The planner does not know where a step's forward ends: 0 unless
  // set by whoever does (memory_vs_recompute sets it from its dry run before --export-plan).
  int64_t predicted_activation_bytes = 0;

  // The plan as a file (docs/plan_format.md, format "remat-plan" version 1): budget, counter,
  // device, dtype, predicted peaks, and per checkpointed region (by name, in forward order, each
  // once) its op calls with their outputs and the decision (save, recompute or offload), and a
  // fingerprint of its op sequence. Readable without remat (python/remat_plan reads it).
  std::string to_json() const;
  void save(const std::string& path) const;
  // A plan read from such a file: its policy() gives each call the file's decision (found by its
  // region, op and index), and throws CheckpointError naming the region and the call for a call the
  // file does not have (or one whose argument shapes differ). A bad file throws CheckpointError
  // saying what is wrong and where (the JSON path). Only the file's figures are known: summary()
  // lists them, with_kept needs applied_to first.
  static CheckpointPlan from_json(const std::string& text);
  static CheckpointPlan load(const std::string& path);
  // This plan's decisions on `step`'s own profile: one dry run on Meta profiles the step, its
  // regions are checked against the plan's (CheckpointError naming the region and the first call
  // that differs), then one more prices the decisions: the predicted peaks are the step's, to the
  // byte, and the result is a plan as plan_checkpointing makes (with_kept works on it).
  CheckpointPlan applied_to(const std::function<void(const PolicyFn&, Device)>& step) const;

  struct Data;  // the calls and regions seen when planning (checkpoint/plan_data.h, internal)
  std::shared_ptr<const Data> data;
};

// step(policy, device): builds what it needs on `device` (model, optimizer, inputs) and runs a
// training step whose checkpointed regions use SAC under `policy`. The planner calls it with
// Device{kMeta} only; the caller then runs plan.policy() for real.
using PlannedStep = std::function<void(const PolicyFn&, Device)>;
CheckpointPlan plan_checkpointing(const PlannedStep& step, const PlannerOptions& options);

}  // namespace remat
