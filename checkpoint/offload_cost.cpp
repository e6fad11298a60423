// The planner's transfer model for offloaded outputs (see offload_cost.h; no PyTorch counterpart).
#include "checkpoint/offload_cost.h"

#include <algorithm>
#include <unordered_set>

namespace remat::planner_detail {

namespace {

// Whether the region's backward reruns it: some output backward needs is not kept on the device
// (dropped, offloaded, or changed in place later, which SAC cannot keep).
bool reruns(const Data& data, const Data::Region& r, const std::vector<bool>& keep, const std::vector<bool>& offload) {
  for (size_t c : r.calls) {
    const Data::Call& call = data.calls[c];
    if (call.needed && (!keep[c] || offload[c] || call.mutated)) return true;
  }
  return false;
}

double forward_seconds(const Data& data, const Data::Region& r) {
  double t = 0;
  for (size_t c : r.calls) t += data.calls[c].cost;
  return t;
}

}  // namespace

TransferCost transfer_cost(const Data& data, const std::vector<bool>& keep, const std::vector<bool>& offload,
                           double bandwidth, size_t first_region) {
  TransferCost cost;
  if (offload.empty()) return cost;
  REMAT_CHECK(bandwidth > 0, "transfer_cost: the host link bandwidth must be positive, got ", bandwidth,
              " bytes/s");
  // The regions of one training step: a scope seen again starts the next step.
  std::vector<size_t> step_end(data.regions.size());
  for (size_t begin = 0; begin < data.regions.size();) {
    std::unordered_set<std::string> seen;
    size_t end = begin;
    while (end < data.regions.size() && seen.insert(data.regions[end].scope).second) ++end;
    for (size_t r = begin; r < end; ++r) step_end[r] = end;
    begin = end;
  }
  for (size_t r = first_region; r < data.regions.size(); ++r) {
    const Data::Region& region = data.regions[r];
    double t = 0, stream_free = 0, back = 0;
    for (size_t c : region.calls) {
      t += data.calls[c].cost;
      if (!offload[c]) continue;
      const double seconds = static_cast<double>(data.calls[c].bytes) / bandwidth;
      stream_free = std::max(stream_free, t) + seconds;
      back += seconds;
      cost.bytes += data.calls[c].bytes;
    }
    if (back == 0) continue;
    cost.exposed_seconds += std::max(0.0, stream_free - t);  // the forward end waits for the copies
    bool later_rerun = false;
    for (size_t later = r + 1; later < step_end[r] && !later_rerun; ++later)
      later_rerun = reruns(data, data.regions[later], keep, offload);
    const double hidden =
        later_rerun && r + 1 < step_end[r] ? kBackwardPerForward * forward_seconds(data, data.regions[r + 1]) : 0.0;
    cost.exposed_seconds += std::max(0.0, back - hidden);
  }
  return cost;
}

}  // namespace remat::planner_detail
