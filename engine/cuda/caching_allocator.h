// Mirrors c10/cuda/CUDACachingAllocator.h: remat's Allocator for kCUDA. Freed blocks are kept
// and handed out again instead of going back to cudaMalloc/cudaFree (which synchronise the
// device):
//   * sizes are rounded up to 512 bytes; requests of at most 1 MiB come from the small pool,
//     carved out of 2 MiB segments; larger ones from the large pool (20 MiB segments below
//     10 MiB, else the size rounded up to 2 MiB);
//   * a cached block larger than asked for is split, and the rest stays cached; freed
//     neighbours of one segment merge again;
//   * blocks are stream-aware: a block belongs to the stream that was current when it was
//     allocated, and is reused only for allocations on that stream. If other streams used the
//     memory (record_stream), freeing it waits (through events) for their queued work before
//     the block is reused;
//   * on out-of-memory the cache is released and the allocation retried once; empty_cache()
//     returns every unused segment to CUDA.
// Statistics are exact: memory_allocated(Device{kCUDA, i}) is the sum of the byte sizes asked
// for by live tensors, memory_reserved the bytes of the segments held from cudaMalloc.
//
// The caching logic (DeviceCachingAllocator) runs over a small DeviceBackend interface, so
// tests can run it on a host-memory fake without a GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>

#include "engine/core/allocator.h"
#include "engine/cuda/cuda_stream.h"

namespace remat {
class Tensor;
}

namespace remat::cuda::CUDACachingAllocator {

constexpr size_t kMinBlockSize = 512;              // every size is rounded up to a multiple
constexpr size_t kSmallSize = 1048576;             // largest request served by the small pool
constexpr size_t kSmallBuffer = 2097152;           // small-pool segment size
constexpr size_t kLargeBuffer = 20971520;          // large-pool segment for requests < 10 MiB
constexpr size_t kMinLargeAlloc = 10485760;        // from here, segments are the rounded size
constexpr size_t kRoundLarge = 2097152;            // rounding of large segments

size_t round_size(size_t nbytes);
size_t allocation_size(size_t rounded);  // the segment cudaMalloc'ed for a request of `rounded`

// What the caching logic asks of a device. Events are opaque handles.
class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  // nullptr when the device is out of memory; any other failure throws.
  virtual void* raw_alloc(size_t nbytes) = 0;
  virtual void raw_free(void* ptr) = 0;
  virtual void* create_event() = 0;
  virtual void destroy_event(void* event) = 0;
  virtual void record_event(void* event, cudaStream_t stream) = 0;
  virtual bool query_event(void* event) = 0;  // true once the recorded work is done
  virtual void synchronize_event(void* event) = 0;
};

// A snapshot of one device's counters.
struct DeviceStats {
  int64_t allocated_bytes = 0;       // live allocations in rounded sizes (memory_allocated, c10's allocated_bytes)
  int64_t requested_bytes = 0;       // bytes asked for by live allocations (c10's requested_bytes)
  int64_t peak_allocated_bytes = 0;  // since the last reset_peak_memory_stats
  int64_t reserved_bytes = 0;        // bytes of the segments held from the device
  int64_t active_blocks = 0;         // blocks handed out and not yet freed
  int64_t active_bytes = 0;          // their (rounded) sizes
  int64_t cached_bytes = 0;          // bytes of free blocks, ready for reuse
  int64_t pending_free_blocks = 0;   // freed, waiting for other streams' events
  int64_t segments = 0;              // segments held
  int64_t device_allocs = 0;         // raw_alloc calls that succeeded (cudaMalloc)
  int64_t device_frees = 0;          // raw_free calls (cudaFree)
  int64_t alloc_retries = 0;         // allocations that released the cache and retried
  int64_t splits = 0;                // blocks split to serve a smaller request
};

// The caching allocator of one device.
class DeviceCachingAllocator {
 public:
  DeviceCachingAllocator(int device, std::unique_ptr<DeviceBackend> backend, AllocatorStats* stats);
  ~DeviceCachingAllocator();
  DeviceCachingAllocator(const DeviceCachingAllocator&) = delete;
  DeviceCachingAllocator& operator=(const DeviceCachingAllocator&) = delete;

  // Memory for nbytes (> 0) to be used on stream. Throws "CUDA out of memory" when even an
  // emptied cache cannot serve it.
  void* malloc(size_t nbytes, cudaStream_t stream);
  void free(void* ptr);
  // Marks ptr (a pointer returned by malloc) as used by stream too.
  void record_stream(void* ptr, cudaStream_t stream);
  // Returns every cached segment with no allocation in it to the device.
  void empty_cache();
  DeviceStats stats() const;
  // The stream a live allocation belongs to; throws for an unknown pointer.
  cudaStream_t stream_of(void* ptr) const;

 private:
  struct Block;
  struct BlockPool;
  struct Comparator {
    bool operator()(const Block* a, const Block* b) const;
  };

  Block* find_free_block(BlockPool& pool, cudaStream_t stream, size_t size);
  void free_block(Block* block);  // back into its pool, merged with free neighbours
  bool try_merge(Block* dst, Block* src, BlockPool& pool);
  void insert_events(Block* block);
  void process_events();
  void synchronize_and_free_events();
  void release_cached_blocks();
  [[noreturn]] void throw_oom(size_t nbytes, size_t alloc_size);

  int device_;
  std::unique_ptr<DeviceBackend> backend_;
  AllocatorStats* stats_;  // allocated/peak/reserved, as memory_allocated() reads them
  mutable std::recursive_mutex mutex_;
  std::unique_ptr<BlockPool> small_, large_;
  std::unordered_map<void*, Block*> active_;
  std::deque<std::pair<void*, Block*>> pending_events_;
  DeviceStats counters_;  // the fields not kept in stats_
};

// The kCUDA allocator (registered with set_allocator at static initialisation).
Allocator* get();
// Frees all unused cached segments of every device (torch.cuda.empty_cache()).
void empty_cache();
DeviceStats get_device_stats(int device);
// Records that the storage behind `data_ptr` (a pointer the allocator returned) is used by
// `stream` (Tensor.record_stream).
void record_stream(void* data_ptr, const CUDAStream& stream);
void record_stream(const Tensor& tensor, const CUDAStream& stream);

}  // namespace remat::cuda::CUDACachingAllocator

namespace remat::cuda {
// torch.cuda.memory_reserved / empty_cache, shorter spellings.
inline void empty_cache() { CUDACachingAllocator::empty_cache(); }
}  // namespace remat::cuda
