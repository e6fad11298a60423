// Mirrors DeviceCachingAllocator of c10/cuda/CUDACachingAllocator.cpp: the CUDA caching
// allocator's block logic alone, over a small DeviceBackend. It lives in the core, apart from
// CUDA, because two backends run it: cudaMalloc for kCUDA (engine/cuda/caching_allocator.cpp),
// and one that allocates nothing for a Meta dry run that imitates CUDA (engine/core/dry_run.cpp),
// so that the dry run's memory_reserved is the device's by construction, not by a second copy.
//   * sizes are rounded up to 512 bytes; requests of at most 1 MiB come from the small pool,
//     carved out of 2 MiB segments; larger ones from the large pool (20 MiB segments below
//     10 MiB, else the size rounded up to 2 MiB);
//   * a cached block larger than asked for is split, and the rest stays cached; freed
//     neighbours of one segment merge again;
//   * blocks are stream-aware: a block belongs to the stream that was current when it was
//     allocated, and is reused only for allocations on that stream. If other streams used the
//     memory (record_stream), freeing it waits (through events) for their queued work before
//     the block is reused (none for a stream with nothing queued at the free: then it is free at
//     once, so that a copy waited for before the free leaves the cache's reuse deterministic);
//   * on out-of-memory the cache is released and the allocation retried once; empty_cache()
//     returns every unused segment to the device.
// One difference from c10, on purpose: among free blocks of the same stream and size, c10 takes
// the lowest address; remat takes the one in the oldest segment (then the lowest offset in it).
// Where cudaMalloc places a segment then never changes what the allocator does, which is what
// lets a dry run predict reserved bytes and segments exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "engine/core/device.h"
#include "engine/core/memory_stats.h"

struct CUstream_st;  // what cudaStream_t points to; declared here so the core needs no CUDA header

namespace remat::cuda::CUDACachingAllocator {

using StreamHandle = ::CUstream_st*;  // a cudaStream_t

constexpr size_t kMinBlockSize = kCUDAMinBlockSize;  // every size is rounded up to a multiple
constexpr size_t kSmallSize = 1048576;               // largest request served by the small pool
constexpr size_t kSmallBuffer = 2097152;             // small-pool segment size
constexpr size_t kLargeBuffer = 20971520;            // large-pool segment for requests < 10 MiB
constexpr size_t kMinLargeAlloc = 10485760;          // from here, segments are the rounded size
constexpr size_t kRoundLarge = 2097152;              // rounding of large segments

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
  virtual void record_event(void* event, StreamHandle stream) = 0;
  virtual bool query_event(void* event) = 0;  // true once the recorded work is done
  virtual void synchronize_event(void* event) = 0;
  // True when all work queued on stream has finished (cudaStreamQuery). free() records no event
  // for a stream that used a block (record_stream) but has nothing queued; false: always record.
  virtual bool query_stream(StreamHandle /*stream*/) { return false; }
};

// A snapshot of one device's counters.
struct DeviceStats {
  int64_t allocated_bytes = 0;       // live allocations in rounded sizes (memory_allocated, c10's allocated_bytes)
  int64_t requested_bytes = 0;       // bytes asked for by live allocations (c10's requested_bytes)
  int64_t peak_allocated_bytes = 0;  // since the last reset_peak_memory_stats
  int64_t reserved_bytes = 0;        // bytes of the segments held from the device
  int64_t peak_reserved_bytes = 0;   // since the last reset_peak_memory_stats (max_memory_reserved)
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
  // `device` names the device in messages ("cuda:0"). stats: allocated/peak/reserved/segments,
  // as memory_allocated() and memory_reserved() read them.
  DeviceCachingAllocator(Device device, std::unique_ptr<DeviceBackend> backend, AllocatorStats* stats);
  DeviceCachingAllocator(int cuda_device, std::unique_ptr<DeviceBackend> backend, AllocatorStats* stats)
      : DeviceCachingAllocator(Device{kCUDA, cuda_device}, std::move(backend), stats) {}
  ~DeviceCachingAllocator();
  DeviceCachingAllocator(const DeviceCachingAllocator&) = delete;
  DeviceCachingAllocator& operator=(const DeviceCachingAllocator&) = delete;

  // Memory for nbytes (> 0) to be used on stream. Throws "CUDA out of memory" when even an
  // emptied cache cannot serve it.
  void* malloc(size_t nbytes, StreamHandle stream);
  void free(void* ptr);
  // Marks ptr (a pointer returned by malloc) as used by stream too.
  void record_stream(void* ptr, StreamHandle stream);
  // Returns every cached segment with no allocation in it to the device.
  void empty_cache();
  DeviceStats stats() const;
  // The stream a live allocation belongs to; throws for an unknown pointer.
  StreamHandle stream_of(void* ptr) const;

 private:
  struct Block;
  struct BlockPool;
  struct Comparator {
    bool operator()(const Block* a, const Block* b) const;
  };

  Block* find_free_block(BlockPool& pool, StreamHandle stream, size_t size);
  void free_block(Block* block);  // back into its pool, merged with free neighbours
  bool try_merge(Block* dst, Block* src, BlockPool& pool);
  void insert_events(Block* block);
  void process_events();
  void synchronize_and_free_events();
  void release_cached_blocks();
  [[noreturn]] void throw_oom(size_t nbytes, size_t alloc_size);

  Device device_;
  std::unique_ptr<DeviceBackend> backend_;
  AllocatorStats* stats_;
  mutable std::recursive_mutex mutex_;
  std::unique_ptr<BlockPool> small_, large_;
  std::unordered_map<void*, Block*> active_;
  std::deque<std::pair<void*, Block*>> pending_events_;
  uint64_t next_segment_ = 0;  // the age of segments, for the choice among equal blocks
  DeviceStats counters_;       // the fields not kept in stats_
};

}  // namespace remat::cuda::CUDACachingAllocator
