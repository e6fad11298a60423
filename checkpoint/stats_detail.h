// The checkpoint machinery's side of the recompute accounting (no PyTorch counterpart; see
// stats.h, whose public figures it writes): mutable access to a region's figures, the FLOPs and
// bytes of a call, the observer the planner (checkpoint/planner.h) profiles dry runs with, and the
// mode that counts a rerun's calls. Internal: remat.h does not reach it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/stats.h"
#include "engine/dispatch/dispatch_mode.h"
#include "engine/dispatch/dispatcher.h"

namespace remat {

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
  // An op call whose outputs SAC offloaded to host memory (forward_call reports it with kept =
  // false: nothing of it stays on the device after the region's forward). `bytes`: their nbytes.
  virtual void offloaded(int64_t /*region*/, const std::string& /*scope*/, const OperatorHandle& /*op*/,
                         int64_t /*index*/, int64_t /*bytes*/) {}
  virtual void saved(int64_t region, const Tensor& tensor) = 0;
  // The region's forward has ended and SAC released the outputs it kept of its `seq`-th forward call
  // (counting from 0 the calls forward_call reported for the region): a rerun never reaches it.
  virtual void released(int64_t /*region*/, int64_t /*seq*/) {}
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
