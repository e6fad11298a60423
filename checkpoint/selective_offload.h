// No PyTorch counterpart (PyTorch's eager SAC recomputes what its policy answers *_CPU_OFFLOAD
// for): what SAC does with an output it offloads: the region's offloaded tensors, their release
// at the region's forward end, the prefetch one region early. The points are those selective.h
// documents under CheckpointPolicy. Internal to checkpoint/selective.cpp: remat.h does not reach it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/offload.h"
#include "checkpoint/selective.h"

namespace remat::sac_detail {

// The outputs one SAC region offloaded, each named by the index add() gives it (its cache entry
// keeps the index). They are owned here from their copy to host until drop(index), which the
// region's storage calls where it releases the cache entry, so host bytes are freed there.
class RegionOffloads {
 public:
  // Forward, a call the policy answered with an offload policy for: whether its outputs go to
  // host memory (each defined tensor on a device that offloads, the whole of a storage of its own,
  // not an input's). When they do not, the answer acts as SAVE and the trace says why (off a
  // device that offloads, once per region). `where` names the call ("scope / op / #index").
  bool decide(int64_t region, CheckpointPolicy policy, const std::string& where, const std::vector<IValue>& args,
              std::vector<IValue>& out);
  // Forward: starts the copies to pinned host memory of the defined tensors of `values`, and puts
  // undefined tensors in their places (until take). *index names them from before the first copy
  // starts. Counts them in the region's stats; returns their bytes.
  int64_t add(int64_t region, const std::string& where, std::vector<IValue>& values, int64_t* index);
  // Whether `index` names offloaded outputs not dropped yet (false for -1, "none").
  bool holds(int64_t index) const;
  // Replay: puts each tensor back into its place in `values` (waiting for its copy to the device,
  // freeing its host buffer).
  void take(int64_t index, std::vector<IValue>& values);
  // The cache entry is released: the tensors it offloaded are destroyed (no-op for -1).
  void drop(int64_t index);
  // The forward is over: checks that no offloaded tensor was changed in place since its copy
  // started, waits for every copy to host, then drops the device tensors.
  void release_device_tensors();

  // Whether the region offloaded anything yet.
  bool empty() const { return order_.empty(); }
  // Whether some offloaded tensor of the region is still in host memory only.
  bool has_offloads_to_fetch() const;
  // Brings every offloaded tensor of the region back to the device (starts the copies).
  void fetch_offloads();
  int64_t region() const { return region_; }
  const Device& device() const { return device_; }

 private:
  struct Output {
    std::string where;
    // In for_each_tensor order; nullptr for an undefined tensor.
    std::vector<std::unique_ptr<offload_detail::OffloadedTensor>> tensors;
  };
  std::vector<Output> outputs_;  // by index
  std::vector<size_t> order_;    // the indices whose copies all started, in forward order
  Device device_;
  int64_t region_ = 0;
  bool as_save_traced_ = false;  // "the offload policies act as SAVE here", once per region
};

// Enters a region in the calling thread's registry of the regions that offloaded something, in
// forward order (on its first offload).
void register_offload_region(const std::shared_ptr<RegionOffloads>& offloads);
// At the start of region `region`'s recompute: its own offloads back now, the previous region's
// ahead (selective.h, "prefetch point").
void prefetch_for_recompute(const std::shared_ptr<RegionOffloads>& self, int64_t region);

}  // namespace remat::sac_detail
