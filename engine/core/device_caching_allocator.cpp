// Mirrors DeviceCachingAllocator and BlockPool of c10/cuda/CUDACachingAllocator.cpp (the
// record_stream event protocol, emptyCache), over a DeviceBackend.
#include "engine/core/device_caching_allocator.h"

#include <iomanip>
#include <iterator>
#include <set>
#include <sstream>
#include <string>

#include "engine/core/error.h"

namespace remat::cuda::CUDACachingAllocator {

size_t round_size(size_t nbytes) { return cuda_round_size(nbytes); }

size_t allocation_size(size_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

// One contiguous piece of a segment. Blocks of a segment form a doubly linked list in address
// order (prev/next), so a freed block can merge with free neighbours.
struct DeviceCachingAllocator::Block {
  StreamHandle stream;
  size_t size;                    // rounded size of this piece
  uint64_t segment = 0;           // the age of its segment (0: the first cudaMalloc'ed)
  size_t requested = 0;           // bytes asked for (while allocated)
  BlockPool* pool;
  char* ptr;
  bool allocated = false;
  int event_count = 0;            // events to wait for before the block is free
  std::set<StreamHandle> stream_uses;  // other streams that used it (record_stream)
  Block* prev = nullptr;
  Block* next = nullptr;
  Block(StreamHandle s, size_t n, BlockPool* p, char* data) : stream(s), size(n), pool(p), ptr(data) {}
  bool is_split() const { return prev != nullptr || next != nullptr; }
};

// Ordered by (stream, size, segment age, address): lower_bound finds the smallest block of a
// stream that fits, in the oldest segment that has one (c10: the lowest address; see the header).
bool DeviceCachingAllocator::Comparator::operator()(const Block* a, const Block* b) const {
  if (a->stream != b->stream) return reinterpret_cast<uintptr_t>(a->stream) < reinterpret_cast<uintptr_t>(b->stream);
  if (a->size != b->size) return a->size < b->size;
  if (a->segment != b->segment) return a->segment < b->segment;
  return reinterpret_cast<uintptr_t>(a->ptr) < reinterpret_cast<uintptr_t>(b->ptr);
}

struct DeviceCachingAllocator::BlockPool {
  explicit BlockPool(bool small) : is_small(small) {}
  std::set<Block*, Comparator> blocks;
  bool is_small;
};

DeviceCachingAllocator::DeviceCachingAllocator(Device device, std::unique_ptr<DeviceBackend> backend,
                                               AllocatorStats* stats)
    : device_(device), backend_(std::move(backend)), stats_(stats), small_(new BlockPool(true)),
      large_(new BlockPool(false)) {}

DeviceCachingAllocator::~DeviceCachingAllocator() {
  // Only tests destroy one (the CUDA allocator lives for the process): give everything back.
  for (auto& [event, block] : pending_events_) backend_->destroy_event(event);
  std::set<Block*> heads;
  auto collect = [&](Block* b) {
    while (b->prev != nullptr) b = b->prev;
    heads.insert(b);
  };
  for (Block* b : small_->blocks) collect(b);
  for (Block* b : large_->blocks) collect(b);
  for (auto& [ptr, b] : active_) collect(b);
  for (auto& [event, b] : pending_events_) collect(b);
  for (Block* head : heads) {
    backend_->raw_free(head->ptr);
    for (Block* b = head; b != nullptr;) {
      Block* next = b->next;
      delete b;
      b = next;
    }
  }
}

DeviceCachingAllocator::Block* DeviceCachingAllocator::find_free_block(BlockPool& pool, StreamHandle stream,
                                                                      size_t size) {
  Block key(stream, size, &pool, nullptr);  // segment 0, address 0: before every block of this size
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end() || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  pool.blocks.erase(it);
  return b;
}

void* DeviceCachingAllocator::malloc(size_t nbytes, StreamHandle stream) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  process_events();
  const size_t size = round_size(nbytes);
  BlockPool& pool = size <= kSmallSize ? *small_ : *large_;
  Block* block = find_free_block(pool, stream, size);
  if (block == nullptr) {
    const size_t alloc_size = allocation_size(size);
    void* ptr = backend_->raw_alloc(alloc_size);
    if (ptr == nullptr) {
      // Out of memory: give the cache back (waiting for pending frees) and try once more.
      ++counters_.alloc_retries;
      release_cached_blocks();
      ptr = backend_->raw_alloc(alloc_size);
      if (ptr == nullptr) throw_oom(nbytes, alloc_size);
    }
    ++counters_.device_allocs;
    ++counters_.segments;
    stats_->on_reserve(static_cast<int64_t>(alloc_size), 1);
    block = new Block(stream, alloc_size, &pool, static_cast<char*>(ptr));
    block->segment = next_segment_++;
  }
  // Split off what this request does not need: in the small pool any rest of at least one
  // minimal block, in the large pool only a rest that itself is a large allocation.
  const size_t rest = block->size - size;
  if (pool.is_small ? rest >= kMinBlockSize : rest > kSmallSize) {
    Block* remaining = new Block(stream, rest, &pool, block->ptr + size);
    remaining->segment = block->segment;
    remaining->prev = block;
    remaining->next = block->next;
    if (remaining->next != nullptr) remaining->next->prev = remaining;
    block->next = remaining;
    block->size = size;
    pool.blocks.insert(remaining);
    ++counters_.splits;
  }
  block->allocated = true;
  block->requested = nbytes;
  active_.emplace(block->ptr, block);
  ++counters_.active_blocks;
  counters_.active_bytes += static_cast<int64_t>(block->size);
  counters_.requested_bytes += static_cast<int64_t>(nbytes);
  // memory_allocated counts rounded sizes, as c10's allocated_bytes does (c10 counts a whole
  // unsplit block; remat the rounded request, which a Meta dry run can predict exactly).
  stats_->on_alloc(static_cast<int64_t>(size));
  return block->ptr;
}

void DeviceCachingAllocator::free(void* ptr) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto it = active_.find(ptr);
  REMAT_CHECK(it != active_.end(), "CUDA caching allocator: free of pointer ", ptr,
              " that was not allocated by it on ", device_);
  Block* block = it->second;
  active_.erase(it);
  --counters_.active_blocks;
  counters_.active_bytes -= static_cast<int64_t>(block->size);
  counters_.requested_bytes -= static_cast<int64_t>(block->requested);
  stats_->on_free(static_cast<int64_t>(round_size(block->requested)));
  block->allocated = false;
  block->requested = 0;
  // A stream with no queued work cannot be using the block any more: no event is needed for it
  // (an event recorded now would complete at once, but at a moment a later malloc could not know,
  // and a block that stays pending for it would make the cache's reuse depend on timing).
  for (auto s = block->stream_uses.begin(); s != block->stream_uses.end();)
    s = backend_->query_stream(*s) ? block->stream_uses.erase(s) : std::next(s);
  if (!block->stream_uses.empty()) {
    insert_events(block);  // reused once the other streams' queued work is done
  } else {
    free_block(block);
  }
}

void DeviceCachingAllocator::record_stream(void* ptr, StreamHandle stream) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto it = active_.find(ptr);
  REMAT_CHECK(it != active_.end(), "record_stream: pointer ", ptr,
              " is not the start of a live allocation of the CUDA caching allocator on ", device_);
  Block* block = it->second;
  if (stream != block->stream) block->stream_uses.insert(stream);
}

StreamHandle DeviceCachingAllocator::stream_of(void* ptr) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto it = active_.find(ptr);
  REMAT_CHECK(it != active_.end(), "CUDA caching allocator: unknown pointer ", ptr);
  return it->second->stream;
}

bool DeviceCachingAllocator::try_merge(Block* dst, Block* src, BlockPool& pool) {
  if (src == nullptr || src->allocated || src->event_count > 0 || !src->stream_uses.empty()) return false;
  if (dst->prev == src) {  // src is before dst
    dst->ptr = src->ptr;
    dst->prev = src->prev;
    if (dst->prev != nullptr) dst->prev->next = dst;
  } else {  // src is after dst
    dst->next = src->next;
    if (dst->next != nullptr) dst->next->prev = dst;
  }
  dst->size += src->size;
  pool.blocks.erase(src);
  delete src;
  return true;
}

void DeviceCachingAllocator::free_block(Block* block) {
  BlockPool& pool = *block->pool;
  try_merge(block, block->prev, pool);
  try_merge(block, block->next, pool);
  pool.blocks.insert(block);
}

void DeviceCachingAllocator::insert_events(Block* block) {
  std::set<StreamHandle> streams = std::move(block->stream_uses);
  block->stream_uses.clear();
  for (StreamHandle s : streams) {
    void* event = backend_->create_event();
    backend_->record_event(event, s);
    ++block->event_count;
    pending_events_.emplace_back(event, block);
  }
}

void DeviceCachingAllocator::process_events() {
  for (auto it = pending_events_.begin(); it != pending_events_.end();) {
    auto [event, block] = *it;
    if (!backend_->query_event(event)) {
      ++it;
      continue;
    }
    backend_->destroy_event(event);
    it = pending_events_.erase(it);
    if (--block->event_count == 0) free_block(block);
  }
}

void DeviceCachingAllocator::synchronize_and_free_events() {
  for (auto& [event, block] : pending_events_) {
    backend_->synchronize_event(event);
    backend_->destroy_event(event);
    if (--block->event_count == 0) free_block(block);
  }
  pending_events_.clear();
}

void DeviceCachingAllocator::release_cached_blocks() {
  synchronize_and_free_events();
  for (BlockPool* pool : {small_.get(), large_.get()}) {
    for (auto it = pool->blocks.begin(); it != pool->blocks.end();) {
      Block* b = *it;
      if (b->is_split()) {  // part of a segment that still has allocations
        ++it;
        continue;
      }
      backend_->raw_free(b->ptr);
      ++counters_.device_frees;
      --counters_.segments;
      stats_->on_reserve(-static_cast<int64_t>(b->size), -1);
      it = pool->blocks.erase(it);
      delete b;
    }
  }
}

void DeviceCachingAllocator::empty_cache() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  release_cached_blocks();
}

namespace {
std::string format_size(size_t n) {
  std::ostringstream os;
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  os << std::fixed << std::setprecision(u == 0 ? 0 : 2) << v << " " << units[u];
  return os.str();
}
}  // namespace

void DeviceCachingAllocator::throw_oom(size_t nbytes, size_t alloc_size) {
  throw Error(detail::str("CUDA out of memory. Tried to allocate ", format_size(nbytes), " (a segment of ",
                          format_size(alloc_size), ") on ", device_, "; ",
                          format_size(static_cast<size_t>(stats_->allocated.load())), " allocated by tensors, ",
                          format_size(static_cast<size_t>(stats_->reserved.load())),
                          " reserved in total by remat's caching allocator"));
}

DeviceStats DeviceCachingAllocator::stats() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  DeviceStats s = counters_;
  s.allocated_bytes = stats_->allocated.load();
  s.peak_allocated_bytes = stats_->peak.load();
  s.reserved_bytes = stats_->reserved.load();
  s.peak_reserved_bytes = stats_->peak_reserved.load();
  int64_t cached = 0;
  for (const BlockPool* pool : {small_.get(), large_.get()})
    for (const Block* b : pool->blocks) cached += static_cast<int64_t>(b->size);
  s.cached_bytes = cached;
  std::set<const Block*> pending;
  for (const auto& [event, b] : pending_events_) pending.insert(b);
  s.pending_free_blocks = static_cast<int64_t>(pending.size());
  return s;
}

}  // namespace remat::cuda::CUDACachingAllocator
