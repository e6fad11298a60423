// Mirrors c10/core/Allocator.h (pluggable per-device allocators) and the statistics behind
// torch.cuda.memory_allocated / max_memory_allocated / reset_peak_memory_stats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "engine/core/device.h"
#include "engine/core/memory_stats.h"

namespace remat {

struct DryRunState;  // engine/core/dry_run.h (a layer below: it counts in memory_stats.h's terms)

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Returns memory for nbytes (nullptr for nbytes == 0 or a device without memory, like Meta).
  virtual void* allocate(Device device, size_t nbytes) = 0;
  virtual void deallocate(Device device, void* ptr, size_t nbytes) = 0;
  virtual AllocatorStats& stats(Device device) = 0;
  // The bytes a request of nbytes adds to stats().allocated (a caching allocator may count
  // rounded block sizes, as c10's CUDA allocator does).
  virtual int64_t counted_bytes(Device, size_t nbytes) const { return static_cast<int64_t>(nbytes); }
  // Returns cached, unused blocks to the system (a caching allocator's torch.cuda.empty_cache).
  virtual void empty_cache(Device) {}
  // Copies between host memory and this allocator's memory (memcpy on CPU).
  virtual void copy_from_host(void* dst, const void* src, size_t nbytes);
  virtual void copy_to_host(void* dst, const void* src, size_t nbytes);
  virtual void copy_within(void* dst, const void* src, size_t nbytes);
};

// The allocator for a device. CPU and Meta are built in; CUDA registers itself when built.
Allocator* get_allocator(Device device);
// Replace a device type's allocator (tests, or a custom memory pool). Returns the previous one.
Allocator* set_allocator(DeviceType type, Allocator* allocator);

// Observer called on every storage allocation and free of every device (nbytes negative on free).
// Used by the memory-timeline benchmark; nullptr to remove.
using AllocationObserver = std::function<void(Device, int64_t nbytes)>;
void set_allocation_observer(AllocationObserver observer);
void notify_allocation(Device device, int64_t nbytes);

// Observers of every storage's life: its allocation, its free, and a change of what its bytes
// are (claim_memory): one event taking the bytes from the old category (delta < 0) and one giving
// them to the new (delta > 0), memory_allocated unchanged. The MemoryTracker is built on these.
// The real devices' events reach every observer of them, process-wide; a Meta storage's reach
// only the observers of the dry run it was allocated in (engine/core/dry_run.h). The events and
// their observers' type (StorageEvent, StorageObserver) are in memory_stats.h.

// Observes the real devices and the Meta storages of the calling thread's current dry run.
// Returns an id for remove_storage_observer. Added inside a DryRun, it is removed when that closes.
int add_storage_observer(StorageObserver observer);
// Observes one kind of device only: the real devices' events (any but Meta), or, for Meta, the
// current dry run's.
int add_storage_observer(Device device, StorageObserver observer);
void remove_storage_observer(int id);  // an unknown id (or one its DryRun removed) is ignored
bool has_storage_observers();               // any observer an event on this thread could reach
bool has_storage_observers(Device device);  // any observer an event of a storage on `device` here reaches
void notify_storage_event(const StorageEvent& event);

// What a dry run on the Meta device counts: by default what the CPU allocator counts (the
// bytes asked for); told to imitate CUDA, what remat's CUDA caching allocator counts (sizes
// rounded up to its 512-byte blocks, as c10's allocated_bytes), so that a dry run predicts a GPU
// step's memory_allocated on a machine without a GPU. Only while no Meta storage is alive. Both
// act on the calling thread's current dry run (engine/core/dry_run.h; DryRun(kCUDA) sets it too).
void set_meta_accounting(DeviceType imitated);
DeviceType meta_accounting();
class MetaAccountingGuard {
 public:
  explicit MetaAccountingGuard(DeviceType imitated);
  ~MetaAccountingGuard();
  MetaAccountingGuard(const MetaAccountingGuard&) = delete;
  MetaAccountingGuard& operator=(const MetaAccountingGuard&) = delete;

 private:
  DryRunState* state_;
  DeviceType prev_;
};

// For Device{kMeta}: the figures of the calling thread's current dry run (engine/core/dry_run.h).
int64_t memory_allocated(Device device = Device{kCPU});      // bytes held by live tensors
int64_t max_memory_allocated(Device device = Device{kCPU});  // peak since last reset
int64_t memory_reserved(Device device = Device{kCPU});       // bytes held from the system
int64_t max_memory_reserved(Device device = Device{kCPU});   // their peak since last reset
int64_t memory_segments(Device device = Device{kCPU});       // blocks held from the system (CUDA: segments)
void empty_cache(Device device = Device{kCPU});              // return cached blocks to the system
// Resets both peaks of `device`, and (for CUDA and Meta) the peak of offloaded_memory_allocated.
void reset_peak_memory_stats(Device device = Device{kCPU});

// Host memory holding tensors that selective checkpointing offloaded from a device
// (CheckpointPolicy::MUST_CPU_OFFLOAD; checkpoint/selective.h). On a CUDA device these are pinned
// host buffers (cudaMallocHost): their bytes are also in memory_allocated(Device{kCPU}), in
// MemoryCategory::Offloaded, and MemoryTracker(Device{kCPU}) sees them come and go. A Meta dry
// run has no host buffer: for Device{kMeta}, the figures are those of the calling thread's
// current dry run (engine/core/dry_run.h), which counts the bytes the imitated device's offloads
// would pin, when they would be pinned and freed, so that a dry run imitating CUDA predicts the
// host bytes as it predicts the device's. Counted as the CPU allocator counts: the bytes asked
// (a tensor's nbytes), no rounding. Any CUDA device: Device{kCUDA, i} all read the same total.
// For the CPU, 0 (nothing is offloaded from the CPU: the offload policies act as SAVE there).
AllocatorStats& offloaded_host_stats(Device device);  // for kCUDA (process-wide) or kMeta (the current dry run's)
int64_t offloaded_memory_allocated(Device device = Device{kCUDA});      // bytes held now
int64_t max_offloaded_memory_allocated(Device device = Device{kCUDA});  // their peak since the last reset

}  // namespace remat
