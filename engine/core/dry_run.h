// A dry run's own counters (no PyTorch counterpart: FakeTensorMode is per thread because its mode
// stack is thread-local, c10's allocator statistics are per device, and MemTracker says it is not
// safe to use from several threads). A dry run is a simulation, so it can own what it counts:
//
//   {
//     DryRun dry(kCUDA);                     // this thread's Meta counters are now this dry run's
//     step(Device{kMeta});                   // counting as CUDA's caching allocator counts
//     max_memory_allocated(Device{kMeta});   // this dry run's peak, whatever other threads run
//   }                                        // back to what the thread used before
//
// Everything the Meta device counts lives in a DryRunState: memory_allocated / max_memory_allocated
// / memory_reserved of Device{kMeta}, what those count (meta_accounting), the storage observers of
// Meta storages (a MemoryTracker on Meta), and what layers above keep per dry run (checkpoint_stats(),
// keyed by id()). A thread's current state is that of its innermost open DryRun; a thread with none
// open uses the process-wide state (the Meta device then behaves like the real ones). Each Meta
// storage remembers the state it was allocated in and counts its free there, whichever thread frees
// it and whenever. The real devices (CPU, CUDA) keep process-wide statistics, as PyTorch's do.
//
// Observers added while a DryRun is open belong to it: they see its Meta storages only (and the
// real devices' events), and are removed when it closes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/intrusive_ptr.h"
#include "engine/core/memory_stats.h"

namespace remat {

namespace cuda::CUDACachingAllocator {
class DeviceCachingAllocator;  // engine/core/device_caching_allocator.h
}

// One list of storage observers with its lock (the real devices' list, or one dry run's).
class StorageObserverList {
 public:
  void add(int id, StorageObserver observer);
  bool remove(int id);  // false if no observer has this id
  void remove_all();
  bool empty() const { return !nonempty_.load(std::memory_order_relaxed); }
  void notify(const StorageEvent& event);

 private:
  std::mutex mutex_;
  std::vector<std::pair<int, StorageObserver>> observers_;
  std::atomic<bool> nonempty_{false};
};

// What one dry run owns. One struct, so that what a later Meta feature keeps per dry run (e.g. an
// imitation of the CUDA caching allocator's block pool, for memory_reserved) goes here too.
struct DryRunState : intrusive_ptr_target {
  DryRunState(uint64_t id, DeviceType imitated);
  ~DryRunState() override;

  const uint64_t id;                 // unique in the process; 0 is the process-wide state
  std::atomic<DeviceType> accounting;  // what Meta counts: kCPU (the bytes asked) or kCUDA (512-byte blocks)
  AllocatorStats stats;              // memory_allocated / max_memory_allocated / memory_reserved of Meta
  // The host side of the imitated device: the bytes that its offloads to pinned host memory
  // (selective checkpointing's MUST_CPU_OFFLOAD) would hold, counted where the real run allocates
  // and frees them (offloaded_memory_allocated(Device{kMeta}) reads it). No Meta storage is made
  // for them: they are no device bytes, and a MemoryTracker on Meta sees the device only.
  AllocatorStats offloaded;
  StorageObserverList observers;     // observers of its Meta storages

  // While it imitates CUDA: the CUDA caching allocator's own block logic over a backend that
  // allocates nothing (made on first use), so that memory_reserved, max_memory_reserved and
  // memory_segments of Meta are what the device's allocator shows for the same step, started
  // from an empty cache. Every block is on one stream (the device's current stream).
  cuda::CUDACachingAllocator::DeviceCachingAllocator& cuda_blocks();
  void empty_cache();  // the imitation's empty_cache (nothing while it has none)

 private:
  std::mutex cuda_blocks_mutex_;
  std::unique_ptr<cuda::CUDACachingAllocator::DeviceCachingAllocator> cuda_blocks_;
};

// The calling thread's current state (never null).
DryRunState& current_dry_run();
// The process-wide state: the one a thread without an open DryRun uses.
DryRunState& process_dry_run();

// RAII: a fresh DryRunState, current in this thread from construction to destruction; the thread's
// previous state after. Nests. Opening one while Meta tensors of the thread's previous state are
// alive is fine: they keep counting there.
class DryRun {
 public:
  explicit DryRun(DeviceType imitated = kCPU);  // kCPU or kCUDA (what the Meta device counts like)
  ~DryRun();
  DryRun(const DryRun&) = delete;
  DryRun& operator=(const DryRun&) = delete;

  DryRunState& state() const { return *state_; }
  uint64_t id() const { return state_->id; }

 private:
  intrusive_ptr<DryRunState> state_;
  DryRunState* previous_;
};

// Layers above that keep something per dry run, keyed by DryRunState::id, are told when a DryRun
// closes so that they can forget it: checkpoint_stats(), and the allocator (allocator.cpp), which
// keeps which dry run each storage observer was added in. A closing DryRun first empties its own
// observer list, then calls the hooks. Hooks are added once, at startup (or on first use).
using DryRunClosedHook = void (*)(uint64_t id);
void add_dry_run_closed_hook(DryRunClosedHook hook);

namespace detail {
// Makes `state` current for the guard's lifetime (nullptr: no change). A Meta storage is freed
// and re-labelled under its own state.
class CurrentDryRunGuard {
 public:
  explicit CurrentDryRunGuard(DryRunState* state);
  ~CurrentDryRunGuard();
  CurrentDryRunGuard(const CurrentDryRunGuard&) = delete;
  CurrentDryRunGuard& operator=(const CurrentDryRunGuard&) = delete;

 private:
  DryRunState* previous_;
  bool active_;
};
// A reference to the current state, for a Meta storage to keep.
intrusive_ptr<DryRunState> retain_current_dry_run();
}  // namespace detail

}  // namespace remat
