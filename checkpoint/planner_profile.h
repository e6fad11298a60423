// The planner's profile of a dry run (no PyTorch counterpart; torch/distributed/_tools/
// sac_estimator.py's SACEstimator records the same per op under a TorchDispatchMode): listens to
// one dry run, and in the profiling run records every op call SAC sees in checkpointed regions
// (its output bytes, recompute cost, whether backward needs its output, whether an in-place op
// changes it later) and the regions they belong to. In every later dry run it checks that the step
// makes the profiling run's calls and prices what is recomputed. Internal (checkpoint/planner.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "checkpoint/plan_data.h"
#include "checkpoint/runtime_estimator.h"
#include "checkpoint/stats_detail.h"

namespace remat::planner_detail {

class DryRunObserver : public stats_detail::PlanningObserver {
 public:
  // profile: record the calls into `data` (its calls, regions and sequence), else check the run's
  // calls against data->sequence. record_regions: also price each region's recompute (the plan's
  // final check, for summary()).
  DryRunObserver(Data* data, bool profile, RuntimeEstimator* estimator, bool record_regions = false)
      : data_(data), profile_(profile), record_regions_(record_regions), estimator_(estimator) {}

  void forward_call(int64_t region, const std::string& scope, const OperatorHandle& op, int64_t index,
                    const std::vector<IValue>& args, const std::vector<IValue>& outputs, bool) override;
  void saved(int64_t, const Tensor& t) override;
  void released(int64_t region, int64_t seq) override;
  // The calls (indices into data->calls) whose kept outputs a region released when its forward
  // ended, in the order released (a call of several regions' keys once per region).
  const std::vector<size_t>& released_calls() const { return released_; }
  void recomputed(int64_t region, const OperatorHandle& op, const std::vector<IValue>& args,
                  const std::vector<IValue>& outputs) override;
  // The price of what was recomputed since checkpoint_stats() was last reset (a step that resets
  // it per training step, as the benchmark's does, is priced per step like its recompute_flops).
  void stats_reset() override {
    overhead_ = 0;
    first_region_ = region_index_.size();
  }

  // After the run: "" if it made the profiling run's calls, else the first difference.
  std::string mismatch();
  // The estimator's price of what was recomputed.
  double overhead() const { return overhead_; }
  // The first region (in the run's order) since checkpoint_stats() was last reset.
  size_t first_region() const { return first_region_; }

 private:
  // Whether the n-th call of a later dry run is the profiling run's n-th call (its region, op,
  // scope, index and argument shapes); records the first difference.
  bool same_as_profile(size_t n, int64_t region, const std::string& scope, const OperatorHandle& op, int64_t index,
                       const std::vector<IValue>& args);
  // The call of `region` (an index into data->calls) whose output, or a view of it, a copy (clone,
  // contiguous, _to_copy) copies as its only tensor argument; -1 for any other call (Call::copy_of).
  int64_t copied_call(const Data::Region& region, const OperatorHandle& op, const std::vector<IValue>& args) const;
  // The region `region` (a checkpoint call's id) is in this run's order; when profiling, its scope
  // narrowed to what it shares with `scope`.
  Data::Region& region_of(int64_t region, const std::string& scope);

  Data* data_;
  bool profile_;
  bool record_regions_;
  RuntimeEstimator* estimator_;
  double overhead_ = 0;
  std::unordered_map<uint64_t, size_t> producer_;  // storage id -> the call that made it
  std::unordered_map<int64_t, size_t> region_index_;
  std::unordered_map<int64_t, std::vector<size_t>> forward_calls_;  // region -> its calls, in forward order
  std::vector<size_t> released_;
  size_t calls_seen_ = 0;
  size_t first_region_ = 0;
  std::string mismatch_;
};

// The scope a region's calls share, cut on whole names: of "layers.1.mlp" and "layers.1.attn",
// "layers.1"; of "layers.10" and "layers.1" (either first), "layers": "layers.1" is not a prefix
// of "layers.10".
std::string common_scope(const std::string& a, const std::string& b);

}  // namespace remat::planner_detail
