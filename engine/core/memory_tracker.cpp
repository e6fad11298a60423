// The memory tracker (see memory_tracker.h), built on the allocator's storage observers.
#include "engine/core/memory_tracker.h"

#include "engine/core/allocator.h"
#include "engine/core/scope_path.h"

namespace remat {

MemoryTracker::MemoryTracker(Device device) : MemoryTracker(device, Keep::kTimeline) {}

MemoryTracker::MemoryTracker(Device device, Keep keep) : device_(device), keep_(keep) {
  // What is alive already (parameters, optimizer state of earlier steps) is known by category.
  AllocatorStats& stats = get_allocator(device)->stats(device);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int c = 0; c < kNumMemoryCategories; ++c) live_[c] = at_peak_[c] = stats.by_category[c].load();
    peak_ = stats.allocated.load();
  }
  // Not under mutex_: an event notified meanwhile holds the observers' lock, then takes mutex_.
  observer_id_ = add_storage_observer(device, [this](const StorageEvent& e) {
    if (e.device == device_) on_event(e);
  });
}

MemoryTracker::~MemoryTracker() { remove_storage_observer(observer_id_); }

void MemoryTracker::on_event(const StorageEvent& e) {
  const bool relabel = e.relabel;
  const int64_t delta = e.delta, allocated = e.allocated;
  const MemoryCategory category = e.category;
  std::lock_guard<std::mutex> lock(mutex_);
  live_[static_cast<int>(category)] += delta;
  if (!relabel) at_peak_is_now_ = false;
  if (allocated > peak_ || (relabel && at_peak_is_now_)) {
    peak_ = std::max(peak_, allocated);
    for (int c = 0; c < kNumMemoryCategories; ++c) at_peak_[c] = live_[c];
    at_peak_is_now_ = true;
  }
  if (!relabel && delta > 0) allocation_sizes_.push_back(delta);
  if (keep_ == Keep::kTimeline)
    timeline_.push_back(MemoryEvent{allocated, delta, current_memory_op(), scope_path(), category,
                                    toString(current_memory_phase()), relabel, e.reserved});
}

int64_t MemoryTracker::peak() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}

namespace {
std::map<MemoryCategory, int64_t> by_category(const int64_t (&bytes)[kNumMemoryCategories]) {
  std::map<MemoryCategory, int64_t> m;
  for (int c = 0; c < kNumMemoryCategories; ++c) m[static_cast<MemoryCategory>(c)] = bytes[c];
  return m;
}
}  // namespace

std::map<MemoryCategory, int64_t> MemoryTracker::at_peak() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return by_category(at_peak_);
}

std::map<MemoryCategory, int64_t> MemoryTracker::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return by_category(live_);
}

const std::vector<MemoryEvent>& MemoryTracker::timeline() const { return timeline_; }

std::vector<int64_t> MemoryTracker::allocation_sizes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return allocation_sizes_;
}

}  // namespace remat
