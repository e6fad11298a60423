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
  int64_t sac_tensors_offloaded = 0;  // outputs SAC moved to pinned host memory in forward (CPU offload policies)
  int64_t sac_bytes_offloaded = 0;    // their bytes
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

}  // namespace remat
