// Mirrors torch/distributed/_tools/mem_tracker.py (MemTracker) and the event log of
// torch.cuda.memory._record_memory_history: while alive, every allocation and free on one
// device, with the op, the scope path, the phase and what the bytes are.
//
//   MemoryTracker tracker(Device{kMeta});      // or kCPU: the same events in the same order
//   train_step();
//   tracker.peak();                            // highest memory_allocated(device) while alive
//   tracker.at_peak()[MemoryCategory::Gradient];  // the gradients' bytes at that moment
//   for (const MemoryEvent& e : tracker.timeline()) ...
//
// On Meta it tracks the calling thread's current dry run only (engine/core/dry_run.h): a tracker
// made inside a DryRun sees that dry run's storages and nothing another thread runs, and stops
// when the DryRun closes. On a real device it sees every thread's storages of that device.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/memory_context.h"

namespace remat {

struct StorageEvent;  // engine/core/allocator.h

struct MemoryEvent {
  int64_t allocated;        // memory_allocated(device) right after this event
  int64_t delta;            // bytes: + allocated, - freed (a change of category is a pair, -n then +n)
  std::string op;           // the op being run ("" outside ops)
  std::string scope;        // current_scope() at the time
  MemoryCategory category;  // what the bytes are (as far as known when they were allocated)
  std::string phase;        // "forward", "backward", "recompute", "optimizer" or "other"
  bool relabel = false;     // half of a change of category (claim_memory), not an allocation or free
  int64_t reserved = 0;     // memory_reserved(device) right after this event
};

class MemoryTracker {
 public:
  // What it keeps of each event: every MemoryEvent (timeline()), or only what peak(), at_peak(),
  // current() and allocation_sizes() read, timeline() left empty: a timed step's tracker, where
  // each event's strings (op, scope, phase) cost more than the event (a checkpointed step's
  // recompute allocates again, so it paid more of them than a step without checkpointing).
  enum class Keep { kTimeline, kCounts };
  explicit MemoryTracker(Device device = Device{kCPU});  // Keep::kTimeline
  MemoryTracker(Device device, Keep keep);
  ~MemoryTracker();
  MemoryTracker(const MemoryTracker&) = delete;
  MemoryTracker& operator=(const MemoryTracker&) = delete;

  Device device() const { return device_; }
  int64_t peak() const;                               // highest memory_allocated(device) while alive
  std::map<MemoryCategory, int64_t> at_peak() const;  // live bytes by category then; they sum to peak()
  std::map<MemoryCategory, int64_t> current() const;  // live bytes by category now
  const std::vector<MemoryEvent>& timeline() const;   // read it once the tracked work is done (Keep::kCounts: empty)
  // The sizes of the allocations (delta > 0, relabels left out) in order: two runs that make the
  // same tensors in the same order have equal sequences.
  std::vector<int64_t> allocation_sizes() const;

 private:
  void on_event(const StorageEvent& e);

  Device device_;
  Keep keep_;
  int observer_id_ = -1;
  mutable std::mutex mutex_;
  int64_t live_[kNumMemoryCategories] = {};
  int64_t peak_ = 0;
  int64_t at_peak_[kNumMemoryCategories] = {};
  bool at_peak_is_now_ = true;  // no allocation or free since the peak: relabels still update it
  std::vector<MemoryEvent> timeline_;
  std::vector<int64_t> allocation_sizes_;
};

}  // namespace remat
