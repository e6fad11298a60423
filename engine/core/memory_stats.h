// What memory is counted in, by the allocators (allocator.h) and by the dry runs (dry_run.h) alike
// (no PyTorch counterpart as one file: the statistics behind torch.cuda.memory_allocated /
// max_memory_allocated / reset_peak_memory_stats, c10's CUDA round_size, and the events
// _record_memory_history records). The layer both build on: a dry run owns a set of these
// counters and its own observers, and the allocator, above it, counts a Meta storage in the
// current dry run's.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "engine/core/device.h"
#include "engine/core/memory_context.h"

namespace remat {

// Exact byte counts of live storages on one device. "allocated" is the sum of the byte sizes
// asked for by live tensors; "reserved" is what the allocator holds from the system: live
// blocks rounded up to the allocator's granularity plus the blocks it caches for reuse.
struct AllocatorStats {
  std::atomic<int64_t> allocated{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> reserved{0};  // live + cached blocks, in the allocator's rounded sizes
  std::atomic<int64_t> peak_reserved{0};
  std::atomic<int64_t> segments{0};  // blocks held from the system (the CUDA allocator's segments)
  // `allocated`, split by what the bytes are (memory_context.h); kept by StorageImpl, so that a
  // MemoryTracker made in the middle of a run knows what the live bytes already are.
  std::atomic<int64_t> by_category[kNumMemoryCategories] = {};

  void on_alloc(int64_t nbytes) {
    int64_t now = allocated.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
    int64_t old = peak.load(std::memory_order_relaxed);
    while (now > old && !peak.compare_exchange_weak(old, now, std::memory_order_relaxed)) {
    }
  }
  void on_free(int64_t nbytes) { allocated.fetch_sub(nbytes, std::memory_order_relaxed); }
  // Bytes and segments taken from the system (> 0) or given back (< 0).
  void on_reserve(int64_t nbytes, int64_t nsegments) {
    segments.fetch_add(nsegments, std::memory_order_relaxed);
    int64_t now = reserved.fetch_add(nbytes, std::memory_order_relaxed) + nbytes;
    int64_t old = peak_reserved.load(std::memory_order_relaxed);
    while (now > old && !peak_reserved.compare_exchange_weak(old, now, std::memory_order_relaxed)) {
    }
  }
  // Both peaks, as torch.cuda.reset_peak_memory_stats.
  void reset_peak() {
    peak.store(allocated.load(std::memory_order_relaxed));
    peak_reserved.store(reserved.load(std::memory_order_relaxed));
  }
};

// The CUDA caching allocator's block rounding (c10's round_size): shared by the CUDA allocator
// and by Meta runs that imitate it, which must agree to the byte.
constexpr size_t kCUDAMinBlockSize = 512;
constexpr size_t cuda_round_size(size_t nbytes) {
  return nbytes < kCUDAMinBlockSize ? kCUDAMinBlockSize
                                    : kCUDAMinBlockSize * ((nbytes + kCUDAMinBlockSize - 1) / kCUDAMinBlockSize);
}

// A storage's allocation, free, or change of what its bytes are (allocator.h's storage observers
// see these).
struct StorageEvent {
  Device device;
  const void* storage;      // the StorageImpl, an identity only
  int64_t delta;            // counted bytes: + allocated, - freed
  MemoryCategory category;  // the category the delta belongs to
  int64_t allocated;        // memory_allocated(device) after the event
  bool relabel;             // part of a change of category, not an allocation or free
  int64_t reserved = 0;     // memory_reserved(device) after the event (a new segment comes first)
};
using StorageObserver = std::function<void(const StorageEvent&)>;

}  // namespace remat
