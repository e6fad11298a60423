// Mirrors c10/core/CPUAllocator.cpp (the default CPU allocator) and c10/core/Allocator.cpp.
#include "engine/core/allocator.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "engine/core/device_caching_allocator.h"
#include "engine/core/dry_run.h"
#include "engine/core/error.h"
#include "engine/core/safe_numerics.h"

namespace remat {

void Allocator::copy_from_host(void* dst, const void* src, size_t n) { std::memcpy(dst, src, n); }
void Allocator::copy_to_host(void* dst, const void* src, size_t n) { std::memcpy(dst, src, n); }
void Allocator::copy_within(void* dst, const void* src, size_t n) { std::memcpy(dst, src, n); }

namespace {

// Every buffer is 64-byte aligned (a cache line; what AVX-512 loads like). This is also what
// makes results bitwise reproducible: BLAS and vectorised loops pick their code path by
// alignment, so the same computation on differently aligned buffers can differ in the last bit.
constexpr size_t kAlignment = 64;

// Under AddressSanitizer nothing is recycled, so a use after free is reported, not hidden.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRecycle = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kRecycle = false;
#else
constexpr bool kRecycle = true;
#endif
#else
constexpr bool kRecycle = true;
#endif

// Small aligned blocks are recycled per thread (aligned_alloc is slow for them), in size
// classes of 64 bytes up to 1 KiB.
constexpr size_t kSmallLimit = 1024;
constexpr size_t kClasses = kSmallLimit / kAlignment;
constexpr size_t kMaxCachedPerClass = 256;

struct SmallBlockCache {
  std::vector<void*> free[kClasses];
  ~SmallBlockCache();
};
thread_local bool tls_small_cache_destroyed = false;  // trivially destructible: readable at exit
thread_local SmallBlockCache tls_small_cache;
SmallBlockCache::~SmallBlockCache() {
  for (auto& list : free)
    for (void* p : list) std::free(p);
  tls_small_cache_destroyed = true;
}

// Large blocks are cached by exact (page-rounded) size, as c10's CUDA caching allocator does
// for device memory: a training step frees and asks again for the same sizes every step, and
// handing a freed block straight back saves the page faults of fresh memory (a tenth of a
// GPT step on CPU when every activation came from the system). The cache holds at most
// kLargeCacheLimit bytes of blocks of their own; empty_cache() returns them all, and the slabs
// below whose every block is free.
constexpr size_t kPage = 4096;
constexpr size_t kLargeCacheLimit = size_t{2} << 30;

// Blocks of 2 MiB and more start on a 2 MiB boundary and are marked MADV_HUGEPAGE, as c10's
// alloc_cpu does under THP_MEM_ALLOC_ENABLE=1: under the kernel's default "madvise" setting only
// marked memory gets transparent huge pages, and a memory-bound kernel streaming a large tensor
// through 4 KiB pages spends a large share of its time on TLB misses (an in-place add of two
// 4096x4096 f32 tensors, 1 thread: 4.2 against 6.0 ms through 4 KiB pages on AMD Zen 4, 5.5
// against 6.0-8.0 ms on a Xeon with AMX). The cache above
// keeps these blocks, so the huge pages are faulted in once, not every step.
constexpr size_t kHugePage = size_t{2} << 20;

// Blocks from 256 KiB to under 2 MiB that pack a huge page with little left over (two of 1 MiB,
// four of 512 KiB, three of 680 KiB; at most kHugePage / 8 unused) are carved from a slab: one 2
// MiB huge page, reserved whole, its blocks cached by size as the others are (whatever
// kLargeCacheLimit says: a slab's block cannot go back alone). In a training step these are most
// activations, read back long after they were written (a saved input in backward, a checkpointed
// region's recompute), from memory: through 4 KiB pages the prefetchers stop at every page and the
// TLB misses. layer_norm of a [1024, 256] f32 input out of cache, 1 thread, AMD Zen 4: 175 -> 134
// us. The GPT step (config A, 1 thread, --profile-ops, 4 alternations), the ops on such blocks
// (layer_norm and its backward, add, clone, cat, mul, masked_fill) per step: f32 none 10.7-12.8 ->
// 8.4-10.1 ms, sac-mm 16.1-19.8 -> 12.5-16.8 ms; bf16 (512 KiB blocks) none 6.4-8.0 -> 5.5-6.9,
// sac-mm 9.6-10.3 -> 7.6-8.8; the ops on larger blocks unchanged. Its resident memory 151.4 ->
// 152.8 MB (a huge page of its own for each block: 213.9). A size that would leave more than an
// eighth of the page unused (one block of 1.5 MiB) keeps 4 KiB pages, as c10 does.
constexpr size_t kSlabMinBlock = size_t{256} << 10;

// Blocks a slab of this rounded size holds; 0: not a slab size.
size_t slab_blocks(size_t rounded) {
  if (rounded < kSlabMinBlock || rounded >= kHugePage) return 0;
  const size_t blocks = kHugePage / rounded;
  return blocks >= 2 && kHugePage - blocks * rounded <= kHugePage / 8 ? blocks : 0;
}

struct Slab {
  size_t blocks = 0;  // how many it was carved into
  size_t cached = 0;  // of those, how many are in the cache (all: the slab can go back)
};

struct LargeBlockCache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void*>> free;  // rounded size -> blocks
  size_t cached_bytes = 0;                              // of blocks that are not a slab's
  std::unordered_map<uintptr_t, Slab> slabs;            // by their 2 MiB-aligned base
};
LargeBlockCache& large_cache() {
  static LargeBlockCache* c = new LargeBlockCache();  // never destroyed, like the registry
  return *c;
}

Slab& slab_of(LargeBlockCache& c, void* p) {
  return c.slabs.at(reinterpret_cast<uintptr_t>(p) & ~(uintptr_t{kHugePage} - 1));
}

void* huge_page_block(size_t bytes) {
  const size_t whole = (bytes + kHugePage - 1) / kHugePage * kHugePage;
  void* p = std::aligned_alloc(kHugePage, whole);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (p != nullptr) madvise(p, bytes, MADV_HUGEPAGE);  // a refusal leaves 4 KiB pages: still correct
#endif
  return p;
}

void* system_block(size_t rounded) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (rounded >= kHugePage) return huge_page_block(rounded);
#endif
  return std::aligned_alloc(kAlignment, rounded);
}

size_t rounded_size(size_t nbytes) {
  size_t r = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  return r <= kSmallLimit ? r : (nbytes + kPage - 1) / kPage * kPage;
}

// Returns a block of rounded_size(nbytes) bytes; *reserved: the bytes it took from the system (a
// block of its own, a whole slab, or 0 from the cache).
void* aligned_block(size_t nbytes, size_t* reserved) {
  size_t rounded = rounded_size(nbytes);
  *reserved = 0;
  if (kRecycle && rounded <= kSmallLimit && !tls_small_cache_destroyed) {
    auto& list = tls_small_cache.free[rounded / kAlignment - 1];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      return p;
    }
  } else if (kRecycle && rounded > kSmallLimit) {
    LargeBlockCache& c = large_cache();
    const size_t per_slab = slab_blocks(rounded);
    std::lock_guard<std::mutex> lock(c.mutex);
    auto& list = c.free[rounded];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      if (per_slab > 0) {
        --slab_of(c, p).cached;
      } else {
        c.cached_bytes -= rounded;
      }
      return p;
    }
    if (per_slab > 0) {  // a new slab: its first block returned, the others cached, last first
      char* base = static_cast<char*>(huge_page_block(kHugePage));
      if (base == nullptr) return nullptr;
      c.slabs[reinterpret_cast<uintptr_t>(base)] = Slab{per_slab, per_slab - 1};
      for (size_t i = per_slab - 1; i >= 1; --i) list.push_back(base + i * rounded);
      *reserved = kHugePage;
      return base;
    }
  }
  *reserved = rounded;
  return system_block(rounded);
}

// Frees or caches a block; returns the bytes that went back to the system (0: cached).
size_t free_block(void* p, size_t nbytes) {
  size_t rounded = rounded_size(nbytes);
  if (kRecycle && rounded <= kSmallLimit && !tls_small_cache_destroyed) {
    auto& list = tls_small_cache.free[rounded / kAlignment - 1];
    if (list.size() < kMaxCachedPerClass) {
      list.push_back(p);
      return 0;
    }
  } else if (kRecycle && rounded > kSmallLimit) {
    LargeBlockCache& c = large_cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (slab_blocks(rounded) > 0) {  // a slab's block stays with its slab until empty_cache()
      ++slab_of(c, p).cached;
      c.free[rounded].push_back(p);
      return 0;
    }
    if (c.cached_bytes + rounded <= kLargeCacheLimit) {
      c.free[rounded].push_back(p);
      c.cached_bytes += rounded;
      return 0;
    }
  }
  std::free(p);
  return rounded;
}

// Returns every cached block of its own, and every slab whose blocks are all cached, to the system;
// the bytes and blocks (slabs counted once) released. A slab with a block in use keeps its others.
std::pair<int64_t, int64_t> release_large_blocks() {
  LargeBlockCache& c = large_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  int64_t released = 0, blocks = 0;
  for (auto& [size, list] : c.free) {
    if (slab_blocks(size) > 0) {
      std::vector<void*> kept;
      for (void* p : list) {
        const Slab& slab = slab_of(c, p);
        if (slab.cached != slab.blocks) kept.push_back(p);
      }
      list.swap(kept);
      continue;
    }
    for (void* p : list) std::free(p);
    released += static_cast<int64_t>(size * list.size());
    blocks += static_cast<int64_t>(list.size());
    list.clear();
  }
  for (auto it = c.slabs.begin(); it != c.slabs.end();) {
    if (it->second.cached != it->second.blocks) {
      ++it;
      continue;
    }
    std::free(reinterpret_cast<void*>(it->first));
    released += static_cast<int64_t>(kHugePage);
    blocks += 1;
    it = c.slabs.erase(it);
  }
  c.cached_bytes = 0;
  return {released, blocks};
}

class CPUAllocator final : public Allocator {
 public:
  void* allocate(Device, size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    size_t reserved = 0;
    void* p = aligned_block(nbytes, &reserved);
    REMAT_CHECK(p != nullptr, "CPU allocator: out of memory allocating ", nbytes, " bytes (",
                stats_.allocated.load(), " bytes already allocated)");
    if (reserved > 0) stats_.on_reserve(static_cast<int64_t>(reserved), 1);
    stats_.on_alloc(static_cast<int64_t>(nbytes));
    notify_allocation(Device{kCPU}, static_cast<int64_t>(nbytes));
    return p;
  }
  void deallocate(Device, void* ptr, size_t nbytes) override {
    if (ptr == nullptr) return;
    const size_t released = free_block(ptr, nbytes);
    if (released > 0) stats_.on_reserve(-static_cast<int64_t>(released), -1);
    stats_.on_free(static_cast<int64_t>(nbytes));
    notify_allocation(Device{kCPU}, -static_cast<int64_t>(nbytes));
  }
  AllocatorStats& stats(Device) override { return stats_; }
  void empty_cache(Device) override {
    const auto [bytes, blocks] = release_large_blocks();
    stats_.on_reserve(-bytes, -blocks);
  }

 private:
  AllocatorStats stats_;
};

// Meta tensors have shapes and dtypes but no memory: nothing is touched, but every storage
// counts what the allocator of the imitated device would count (set_meta_accounting), so a
// step on Meta reports the peak the same step shows on that device. All of it in the calling
// thread's current dry run (dry_run.h): a Meta storage is freed with its own made current.
// Imitating CUDA, the dry run's copy of the caching allocator's block logic counts (and returns
// a block address, which StorageImpl keeps for the free but never shows: a Meta data() is null).
class MetaAllocator final : public Allocator {
 public:
  void* allocate(Device device, size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    DryRunState& state = current_dry_run();
    check_total(state, device, nbytes);
    if (state.accounting.load(std::memory_order_relaxed) == kCUDA) return state.cuda_blocks().malloc(nbytes, nullptr);
    state.stats.on_alloc(counted_bytes(device, nbytes));
    return nullptr;
  }
  void deallocate(Device, void* block, size_t nbytes) override {
    if (nbytes == 0) return;
    DryRunState& state = current_dry_run();
    if (block != nullptr) {
      state.cuda_blocks().free(block);
    } else {
      state.stats.on_free(static_cast<int64_t>(nbytes));
    }
  }
  int64_t counted_bytes(Device, size_t nbytes) const override {
    if (nbytes == 0) return 0;
    return static_cast<int64_t>(current_dry_run().accounting.load(std::memory_order_relaxed) == kCUDA
                                    ? cuda_round_size(nbytes)
                                    : nbytes);
  }
  AllocatorStats& stats(Device) override { return current_dry_run().stats; }
  void empty_cache(Device) override { current_dry_run().empty_cache(); }
  void copy_from_host(void*, const void*, size_t) override {}
  void copy_to_host(void*, const void*, size_t) override {}
  void copy_within(void*, const void*, size_t) override {}

 private:
  // A dry run counts a model of any size, but its running totals stay at most int64's maximum less
  // 1 GiB (slack for the caching allocator's rounding and segment sizes): past that,
  // memory_allocated or memory_reserved would overflow int64 and go negative. Refused before
  // anything is counted, naming the figures (issue 45; engine/core/safe_numerics.h).
  void check_total(DryRunState& state, Device device, size_t nbytes) const {
    constexpr int64_t kMaxTotal = std::numeric_limits<int64_t>::max() - (int64_t{1} << 30);
    const int64_t counted = nbytes > static_cast<uint64_t>(kMaxTotal) ? kMaxTotal + 1 : counted_bytes(device, nbytes);
    for (const auto& [name, total] : {std::pair<const char*, int64_t>{"memory_allocated", state.stats.allocated.load()},
                                      {"memory_reserved", state.stats.reserved.load()}}) {
      int64_t sum = 0;
      if (add_overflows(total, counted, &sum) || sum > kMaxTotal)
        throw Error("dry run (Meta device): allocating " + std::to_string(nbytes) + " bytes (counted as " +
                    std::to_string(counted) + ") would bring " + name + " from " + std::to_string(total) +
                    " past " + std::to_string(kMaxTotal) + " bytes (int64's maximum less 1 GiB, the most a dry run "
                    "counts)");
    }
  }
};

void forget_storage_observers_of(uint64_t dry_run_id);

struct Registry {
  // Every storage observer is added through the registry, so the hook is there before any DryRun
  // it has to know of closes.
  Registry() { add_dry_run_closed_hook(&forget_storage_observers_of); }

  CPUAllocator cpu;
  MetaAllocator meta;
  std::atomic<Allocator*> by_type[kNumDeviceTypes] = {{&cpu}, {nullptr}, {&meta}};
  AllocationObserver observer;
  std::atomic<bool> has_observer{false};
  // Storage observers: the real devices' list, and which dry run's list (if any) each id is in.
  StorageObserverList real_observers;
  std::mutex storage_observers_mutex;
  std::unordered_map<int, intrusive_ptr<DryRunState>> meta_observer_state;
  int next_storage_observer = 0;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: storages may outlive static teardown
  return *r;
}

// A DryRun closed (it has emptied its own list): its observers stop observing the real devices too.
void forget_storage_observers_of(uint64_t dry_run_id) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.storage_observers_mutex);
  for (auto it = r.meta_observer_state.begin(); it != r.meta_observer_state.end();) {
    if (it->second->id == dry_run_id) {
      r.real_observers.remove(it->first);
      it = r.meta_observer_state.erase(it);
    } else {
      ++it;
    }
  }
}

int add_observer(bool real, bool meta, StorageObserver observer) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.storage_observers_mutex);
  const int id = r.next_storage_observer++;
  if (real && meta) {
    r.real_observers.add(id, observer);
  } else if (real) {
    r.real_observers.add(id, std::move(observer));
  }
  if (meta) {
    intrusive_ptr<DryRunState> state = detail::retain_current_dry_run();
    state->observers.add(id, std::move(observer));
    r.meta_observer_state.emplace(id, std::move(state));
  }
  return id;
}

}  // namespace

Allocator* get_allocator(Device device) {
  Allocator* a = registry().by_type[static_cast<int>(device.type)].load(std::memory_order_acquire);
  REMAT_CHECK(a != nullptr, "no allocator for device ", device,
              device.is_cuda() ? " (remat was built without CUDA; build with --config=cuda)" : "");
  return a;
}

Allocator* set_allocator(DeviceType type, Allocator* allocator) {
  return registry().by_type[static_cast<int>(type)].exchange(allocator);
}

void set_allocation_observer(AllocationObserver observer) {
  Registry& r = registry();
  r.has_observer.store(false);
  r.observer = std::move(observer);
  r.has_observer.store(static_cast<bool>(r.observer));
}

void notify_allocation(Device device, int64_t nbytes) {
  Registry& r = registry();
  if (r.has_observer.load(std::memory_order_relaxed)) r.observer(device, nbytes);
}

int add_storage_observer(StorageObserver observer) { return add_observer(true, true, std::move(observer)); }

int add_storage_observer(Device device, StorageObserver observer) {
  return add_observer(!device.is_meta(), device.is_meta(), std::move(observer));
}

void remove_storage_observer(int id) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.storage_observers_mutex);
  r.real_observers.remove(id);
  auto it = r.meta_observer_state.find(id);
  if (it != r.meta_observer_state.end()) {
    it->second->observers.remove(id);
    r.meta_observer_state.erase(it);
  }
}

bool has_storage_observers() { return !registry().real_observers.empty() || !current_dry_run().observers.empty(); }

bool has_storage_observers(Device device) {
  return device.is_meta() ? !current_dry_run().observers.empty() : !registry().real_observers.empty();
}

void notify_storage_event(const StorageEvent& event) {
  if (event.device.is_meta()) {
    current_dry_run().observers.notify(event);
  } else {
    registry().real_observers.notify(event);
  }
}

void set_meta_accounting(DeviceType imitated) {
  REMAT_CHECK(imitated != kMeta, "set_meta_accounting: a Meta run imitates cpu or cuda, not meta");
  DryRunState& state = current_dry_run();
  int64_t live = state.stats.allocated.load();
  REMAT_CHECK(live == 0 || imitated == state.accounting.load(),
              "set_meta_accounting: cannot change what the Meta device counts while Meta tensors are alive (", live,
              " bytes allocated on meta)");
  // The imitated cache of a run that counted like CUDA goes with that setting.
  if (imitated != state.accounting.load()) state.empty_cache();
  state.accounting.store(imitated);
}

DeviceType meta_accounting() { return current_dry_run().accounting.load(); }

MetaAccountingGuard::MetaAccountingGuard(DeviceType imitated)
    : state_(&current_dry_run()), prev_(state_->accounting.load()) {
  set_meta_accounting(imitated);
}
MetaAccountingGuard::~MetaAccountingGuard() {
  // Restoring with Meta tensors still alive would unbalance the counts: keep the setting then.
  if (state_->stats.allocated.load() != 0 || state_->accounting.load() == prev_) return;
  state_->empty_cache();
  state_->accounting.store(prev_);
}

int64_t memory_allocated(Device device) { return get_allocator(device)->stats(device).allocated.load(); }
int64_t max_memory_allocated(Device device) { return get_allocator(device)->stats(device).peak.load(); }
int64_t memory_reserved(Device device) { return get_allocator(device)->stats(device).reserved.load(); }
int64_t max_memory_reserved(Device device) { return get_allocator(device)->stats(device).peak_reserved.load(); }
int64_t memory_segments(Device device) { return get_allocator(device)->stats(device).segments.load(); }
void empty_cache(Device device) { get_allocator(device)->empty_cache(device); }
void reset_peak_memory_stats(Device device) {
  get_allocator(device)->stats(device).reset_peak();
  if (!device.is_cpu()) offloaded_host_stats(device).reset_peak();
}

AllocatorStats& offloaded_host_stats(Device device) {
  REMAT_CHECK(!device.is_cpu(), "offloaded_host_stats: nothing is offloaded from ", device,
              " (ask for the device the tensors were offloaded from: cuda, or meta in a dry run)");
  if (device.is_meta()) return current_dry_run().offloaded;
  static AllocatorStats* real = new AllocatorStats();  // never destroyed: storages may outlive statics
  return *real;
}

int64_t offloaded_memory_allocated(Device device) {
  return device.is_cpu() ? 0 : offloaded_host_stats(device).allocated.load();
}
int64_t max_offloaded_memory_allocated(Device device) {
  return device.is_cpu() ? 0 : offloaded_host_stats(device).peak.load();
}

}  // namespace remat
