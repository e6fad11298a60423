// remat's recompute accounting (no PyTorch counterpart; the closest is
// torch.utils.flop_counter run by hand around a backward).
//
// Per checkpointed region (one checkpoint call = one region, numbered like the trace) and in
// total: how often the region was rerun, how many op calls were replayed from the selective
// checkpoint cache and how many really ran again, the FLOPs and bytes those recomputed calls
// cost, and how many tensors / bytes the region kept: SAC's cache, and recomputed tensors
// waiting in holders for backward to take them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/dispatch/dispatch_mode.h"
#include "engine/dispatch/dispatcher.h"

namespace remat {

struct CheckpointRegionStats {
  int64_t region = 0;               // id of the checkpoint call (0 in the total)
  int64_t recomputations = 0;       // reruns of the region
  int64_t tensors_packed = 0;       // tensors autograd saved in forward, replaced by holders
  int64_t ops_recomputed = 0;       // op calls that ran again during reruns
  int64_t ops_replayed = 0;         // op calls answered from the SAC cache during reruns
  double flops_recomputed = 0;      // matmul family: 2*m*n*k; others: one per output element
  int64_t bytes_recomputed = 0;     // bytes of the outputs of recomputed op calls
  int64_t sac_tensors_saved = 0;    // outputs SAC kept in forward
  int64_t sac_bytes_saved = 0;      // their bytes
  int64_t sac_bytes_held = 0;       // bytes SAC's cache holds now
  int64_t sac_bytes_held_peak = 0;
  int64_t holder_bytes_held = 0;    // recomputed tensors waiting in holders now
  int64_t holder_bytes_held_peak = 0;
  std::map<std::string, int64_t> recomputed_by_op;  // op name -> recomputed calls
  std::map<std::string, int64_t> replayed_by_op;    // op name -> replayed calls

  void add(const CheckpointRegionStats& o);
};

struct CheckpointStats {
  std::vector<CheckpointRegionStats> regions;  // in region order
  CheckpointRegionStats total;
};

// The regions of the calling thread's current dry run (engine/core/dry_run.h): inside a DryRun,
// those that ran in it; outside every DryRun, those that ran outside every DryRun, in any thread.
CheckpointStats checkpoint_stats();
void reset_checkpoint_stats();

namespace stats_detail {
// Mutable access for the checkpoint machinery (thread-safe).
struct Update {
  explicit Update(int64_t region);
  ~Update();
  CheckpointRegionStats& operator*() { return *s; }
  CheckpointRegionStats* operator->() { return s; }
  CheckpointRegionStats* s;

 private:
  int64_t region_;
};
// FLOPs of one op call with these arguments and outputs (matmul family: 2*m*n*k).
double op_flops(const OperatorHandle& op, const std::vector<IValue>& args, const std::vector<IValue>& outputs);
int64_t bytes_of(const std::vector<IValue>& values);
// What the planner (checkpoint/planner.h) listens to while it profiles a dry run: every op call
// SAC decides on in forward (with its outputs), every tensor a region saves for backward, and
// every op call that really runs again during a rerun. One per thread; nullptr when none.
class PlanningObserver {
 public:
  virtual ~PlanningObserver() = default;
  virtual void forward_call(int64_t region, const std::string& scope, const OperatorHandle& op, int64_t index,
                            const std::vector<IValue>& args, const std::vector<IValue>& outputs, bool kept) = 0;
  virtual void saved(int64_t region, const Tensor& tensor) = 0;
  virtual void recomputed(int64_t region, const OperatorHandle& op, const std::vector<IValue>& args,
                          const std::vector<IValue>& outputs) = 0;
  // reset_checkpoint_stats() was called: totals that should read like checkpoint_stats() restart.
  virtual void stats_reset() {}
};
PlanningObserver* planning_observer();
void set_planning_observer(PlanningObserver* observer);

// A pass-through dispatch mode, active while a region is rerun, that counts the op calls that
// really run (and their FLOPs and output bytes) for the region.
std::shared_ptr<DispatchMode> make_recompute_accounting_mode(int64_t region);
}  // namespace stats_detail

}  // namespace remat
