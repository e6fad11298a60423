// The planner's transfer model for offloaded outputs (no PyTorch counterpart; torchtitan's
// sac_and_offload and torch/_functorch's activation offloading price a transfer as bytes over a
// bandwidth, compiled graphs only): what of the copies to host and back compute does not hide.
// Modeled, never measured. Internal (checkpoint/planner_dry_runs.cpp).
//
// The points are selective.h's: an offloaded output is copied to host after its producer, on one
// offload stream (copies in a region run one after another), and the region's forward end waits
// for them; in backward a region's offloaded outputs are brought back when the next rerun region
// (in forward order) starts its recompute, and its own backward waits for them. So, per region:
//   forward:  the copies queued from each producer's end; exposed: how far the last one ends after
//             the region's forward compute does;
//   backward: the copy back hides behind the backward of the next region of the same step
//             (kBackwardPerForward times its forward compute) if a later region reruns at all,
//             else nothing hides it; exposed: what it exceeds that by.
// Compute is each call's price from the cost model (Data::Call::cost: the time of one call). Each
// region's copies back are set against that one region's backward (not queued behind others), so
// the figure is a model, not a schedule.
#pragma once

#include <cstdint>
#include <vector>

#include "checkpoint/plan_data.h"

namespace remat::planner_detail {

// A region's backward takes this many times its forward compute (the matmuls' two GEMMs per one).
constexpr double kBackwardPerForward = 2.0;

struct TransferCost {
  double exposed_seconds = 0;  // the copies' time compute does not hide, forward and backward
  int64_t bytes = 0;           // bytes offloaded (each copied to host and back once)
};

// The transfers of offloading the calls in `offload` (per call of data.calls) in every region of
// the step, at `bandwidth` bytes/s each way; keep: the calls kept on the device (a region reruns
// unless every output backward needs is kept). Regions before first_region are not counted (a
// step that resets checkpoint_stats() per training step is priced per step, as its overhead is).
// Pure: data's profile, no dry run.
TransferCost transfer_cost(const Data& data, const std::vector<bool>& keep, const std::vector<bool>& offload,
                           double bandwidth, size_t first_region = 0);

}  // namespace remat::planner_detail
