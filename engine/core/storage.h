// Mirrors c10/core/StorageImpl.h: one allocation, shared by a tensor and all its views.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "engine/core/allocator.h"
#include "engine/core/device.h"
#include "engine/core/dry_run.h"
#include "engine/core/intrusive_ptr.h"

namespace remat {

class StorageImpl : public intrusive_ptr_target {
 public:
  StorageImpl(size_t nbytes, Device device) : StorageImpl(nbytes, device, get_allocator(device)) {}
  // Memory from a given allocator rather than the device's own (c10: a StorageImpl's allocator),
  // e.g. pinned host memory for a Device{kCPU} storage. The allocator's stats(device) are where the
  // storage counts its bytes by category.
  StorageImpl(size_t nbytes, Device device, Allocator* allocator)
      : nbytes_(nbytes), device_(device),
        dry_run_(device.is_meta() ? detail::retain_current_dry_run() : nullptr), allocator_(allocator),
        data_(allocator_->allocate(device, nbytes)), counted_(allocator_->counted_bytes(device, nbytes)),
        category_(current_memory_category()), id_(next_id().fetch_add(1, std::memory_order_relaxed)) {
    account(category_, counted_, false);
  }
  // A Meta storage counts its free in the dry run it was allocated in, from any thread.
  ~StorageImpl() override {
    detail::CurrentDryRunGuard own(dry_run_.get());
    allocator_->deallocate(device_, data_, nbytes_);
    account(category_, -counted_, false);
  }
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  // Null on Meta, whatever the allocator returned (a dry run imitating CUDA gets a block address
  // that only its own free uses).
  void* data() const { return device_.is_meta() ? nullptr : data_; }
  // Unique among all storages this process ever makes (an address is reused once a storage is
  // freed): what bookkeeping that outlives a storage keys on, so that a later storage at the same
  // address is not taken for it.
  uint64_t id() const { return id_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // The version counter (torch/csrc/autograd/variable.h, VariableVersion). PyTorch shares one
  // counter between a tensor and its views; remat keeps it on the storage they all share, which
  // is the same thing without one more allocation per tensor.
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

  // What the bytes are (memory_context.h), for the memory tracker. claim() re-labels them when
  // `category` comes before the current one in MemoryCategory's order.
  MemoryCategory memory_category() const { return category_; }
  void claim(MemoryCategory category) {
    if (static_cast<int>(category) >= static_cast<int>(category_)) return;
    detail::CurrentDryRunGuard own(dry_run_.get());
    account(category_, -counted_, true);
    category_ = category;
    account(category_, counted_, true);
  }

 private:
  size_t nbytes_;
  Device device_;
  intrusive_ptr<DryRunState> dry_run_;  // Meta only: the dry run whose counters it counts in
  Allocator* allocator_;
  void* data_;
  int64_t counted_;  // what this storage adds to its allocator's stats().allocated
  MemoryCategory category_;
  std::atomic<uint32_t> version_{0};
  uint64_t id_;

  static std::atomic<uint64_t>& next_id() {
    static std::atomic<uint64_t> n{1};
    return n;
  }

  void account(MemoryCategory c, int64_t delta, bool relabel) {
    if (counted_ == 0) return;
    AllocatorStats& s = allocator_->stats(device_);
    s.by_category[static_cast<int>(c)].fetch_add(delta, std::memory_order_relaxed);
    if (has_storage_observers(device_))
      notify_storage_event(StorageEvent{device_, this, delta, c, s.allocated.load(std::memory_order_relaxed), relabel,
                                        s.reserved.load(std::memory_order_relaxed)});
  }
};

}  // namespace remat
