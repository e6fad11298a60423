// Tests engine/core/device_caching_allocator.{h,cpp}: the CUDA caching allocator's block logic,
// over a host-memory fake device, and a Meta dry run that imitates CUDA, which runs the same logic
// (no GPU, no CUDA build: these run in every build).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <vector>
#include <map>
#include <set>

#include "engine/core/device_caching_allocator.h"
#include "remat.h"

using namespace remat;
namespace cca = remat::cuda::CUDACachingAllocator;

namespace {

constexpr size_t kMiB = 1024 * 1024;

// Host memory standing in for a device; events complete when the test says so.
class FakeBackend final : public cca::DeviceBackend {
 public:
  struct Event {
    bool done = false;
    cca::StreamHandle stream = nullptr;
  };
  size_t capacity = SIZE_MAX;
  size_t used = 0;
  int allocs = 0, frees = 0;
  std::map<void*, size_t> live;
  std::set<Event*> events;

  bool downwards = false;  // hand out segments at ever lower addresses
  bool shuffled = false;   // at addresses in no order (a pool of reserved address space)
  std::mt19937_64 rng{11};
  uintptr_t next_down = uintptr_t{1} << 44;

  void* raw_alloc(size_t n) override {
    if (used + n > capacity) return nullptr;
    void* p = nullptr;
    if (downwards) {
      next_down -= (n + 4095) / 4096 * 4096 + 4096;
      p = reinterpret_cast<void*>(next_down);  // never dereferenced
    } else if (shuffled) {
      // A free 1 GiB slot (larger than any segment here): ranges never overlap, and are never read.
      uintptr_t slot = rng() % 4096;
      while (live.count(reinterpret_cast<void*>((uintptr_t{1} << 44) + (slot << 30))) != 0) slot = (slot + 1) % 4096;
      p = reinterpret_cast<void*>((uintptr_t{1} << 44) + (slot << 30));
    } else {
      p = std::aligned_alloc(512, n);
    }
    used += n;
    live[p] = n;
    ++allocs;
    return p;
  }
  void raw_free(void* p) override {
    REQUIRE(live.count(p) == 1);
    used -= live[p];
    live.erase(p);
    if (!downwards && !shuffled) std::free(p);
    ++frees;
  }
  void* create_event() override {
    auto* e = new Event();
    events.insert(e);
    return e;
  }
  void destroy_event(void* e) override {
    events.erase(static_cast<Event*>(e));
    delete static_cast<Event*>(e);
  }
  void record_event(void* e, cca::StreamHandle s) override {
    static_cast<Event*>(e)->stream = s;
    static_cast<Event*>(e)->done = false;
  }
  bool query_event(void* e) override { return static_cast<Event*>(e)->done; }
  std::set<cca::StreamHandle> idle_streams;  // streams with no queued work (query_stream)
  bool query_stream(cca::StreamHandle s) override { return idle_streams.count(s) != 0; }
  void synchronize_event(void* e) override { static_cast<Event*>(e)->done = true; }
  void complete_all() {
    for (Event* e : events) e->done = true;
  }
};

cca::StreamHandle stream(int i) { return reinterpret_cast<cca::StreamHandle>(static_cast<uintptr_t>(0x1000 * i)); }

struct Fixture {
  AllocatorStats stats;
  FakeBackend* backend = new FakeBackend();
  cca::DeviceCachingAllocator alloc{0, std::unique_ptr<cca::DeviceBackend>(backend), &stats};
};

char* at(void* p, size_t offset) { return static_cast<char*>(p) + offset; }

}  // namespace

TEST_CASE("sizes round to 512 bytes; segments are 2 MiB, 20 MiB or the size rounded to 2 MiB", "[allocator]") {
  CHECK(cca::round_size(1) == 512);
  CHECK(cca::round_size(512) == 512);
  CHECK(cca::round_size(513) == 1024);
  CHECK(cca::allocation_size(512) == 2 * kMiB);
  CHECK(cca::allocation_size(kMiB) == 2 * kMiB);
  CHECK(cca::allocation_size(kMiB + 512) == 20 * kMiB);
  CHECK(cca::allocation_size(10 * kMiB - 512) == 20 * kMiB);
  CHECK(cca::allocation_size(10 * kMiB) == 10 * kMiB);
  CHECK(cca::allocation_size(11 * kMiB + 512) == 12 * kMiB);
}

TEST_CASE("small allocations are carved out of one 2 MiB segment and reused after free", "[allocator]") {
  Fixture f;
  void* a = f.alloc.malloc(1000, stream(1));
  void* b = f.alloc.malloc(3000, stream(1));
  CHECK(b == at(a, 1024));  // split from the same segment, right after a
  CHECK(f.backend->allocs == 1);
  cca::DeviceStats s = f.alloc.stats();
  CHECK(s.allocated_bytes == 1024 + 3072);  // rounded to 512-byte blocks, as c10 counts
  CHECK(s.requested_bytes == 4000);
  CHECK(s.reserved_bytes == static_cast<int64_t>(2 * kMiB));
  CHECK(s.segments == 1);
  CHECK(s.active_blocks == 2);
  CHECK(s.active_bytes == 1024 + 3072);
  CHECK(s.cached_bytes == static_cast<int64_t>(2 * kMiB - 4096));

  f.alloc.free(a);
  CHECK(f.alloc.stats().allocated_bytes == 3072);
  CHECK(f.alloc.stats().requested_bytes == 3000);
  void* c = f.alloc.malloc(900, stream(1));
  CHECK(c == a);  // the freed block is the best fit
  CHECK(f.backend->allocs == 1);
  f.alloc.free(b);
  f.alloc.free(c);
  s = f.alloc.stats();
  CHECK(s.allocated_bytes == 0);
  CHECK(s.active_blocks == 0);
  CHECK(s.cached_bytes == static_cast<int64_t>(2 * kMiB));  // merged back into one free segment
}

TEST_CASE("large blocks are split, and freed neighbours merge", "[allocator]") {
  Fixture f;
  void* x = f.alloc.malloc(3 * kMiB, stream(1));
  void* y = f.alloc.malloc(5 * kMiB, stream(1));
  CHECK(f.backend->allocs == 1);  // both from one 20 MiB segment
  CHECK(y == at(x, 3 * kMiB));
  CHECK(f.alloc.stats().reserved_bytes == static_cast<int64_t>(20 * kMiB));
  f.alloc.free(x);
  f.alloc.free(y);
  void* z = f.alloc.malloc(19 * kMiB, stream(1));  // needs the merged segment
  CHECK(z == x);
  CHECK(f.backend->allocs == 1);
  // A rest of 1 MiB or less is not split off in the large pool: z holds the whole segment.
  CHECK(f.alloc.stats().active_bytes == static_cast<int64_t>(20 * kMiB));
  f.alloc.free(z);
}

TEST_CASE("a request of 10 MiB or more gets a segment of its size rounded to 2 MiB", "[allocator]") {
  Fixture f;
  void* p = f.alloc.malloc(11 * kMiB + 1, stream(1));
  CHECK(f.backend->live.at(p) == 12 * kMiB);
  CHECK(f.alloc.stats().reserved_bytes == static_cast<int64_t>(12 * kMiB));
  f.alloc.free(p);
}

TEST_CASE("a freed block is reused only by allocations on its stream", "[allocator]") {
  Fixture f;
  void* a = f.alloc.malloc(1000, stream(1));
  f.alloc.free(a);
  void* b = f.alloc.malloc(1000, stream(2));
  CHECK(b != a);
  CHECK(f.backend->allocs == 2);  // stream 2 got its own segment
  CHECK(f.alloc.stream_of(b) == stream(2));
  void* c = f.alloc.malloc(1000, stream(1));
  CHECK(c == a);
  f.alloc.free(b);
  f.alloc.free(c);
}

TEST_CASE("record_stream: a block used by another stream is reused only after that stream's work", "[allocator]") {
  Fixture f;
  void* a = f.alloc.malloc(1000, stream(1));
  f.alloc.record_stream(a, stream(2));
  f.alloc.record_stream(a, stream(1));  // its own stream: nothing to wait for
  f.alloc.free(a);
  CHECK(f.alloc.stats().pending_free_blocks == 1);
  CHECK(f.backend->events.size() == 1);
  CHECK((*f.backend->events.begin())->stream == stream(2));
  CHECK(f.alloc.stats().allocated_bytes == 0);  // no tensor holds it any more

  void* b = f.alloc.malloc(1000, stream(1));
  CHECK(b != a);  // stream 2 may still be using a
  f.backend->complete_all();
  void* c = f.alloc.malloc(1000, stream(1));
  CHECK(c == a);  // the event completed: a is back in the pool
  CHECK(f.alloc.stats().pending_free_blocks == 0);
  CHECK(f.backend->events.empty());
  f.alloc.free(b);
  f.alloc.free(c);
}

TEST_CASE("record_stream: a stream with no queued work at the free needs no event; the block is reused at once",
          "[allocator]") {
  Fixture f;
  void* a = f.alloc.malloc(1000, stream(1));
  f.alloc.record_stream(a, stream(2));
  f.alloc.record_stream(a, stream(3));
  f.backend->idle_streams = {stream(2)};  // stream 2's copy was waited for; stream 3 still works
  f.alloc.free(a);
  CHECK(f.backend->events.size() == 1);
  CHECK((*f.backend->events.begin())->stream == stream(3));
  f.backend->complete_all();
  void* b = f.alloc.malloc(1000, stream(1));
  CHECK(b == a);
  f.backend->idle_streams = {stream(2), stream(3)};
  f.alloc.record_stream(b, stream(2));
  f.alloc.record_stream(b, stream(3));
  f.alloc.free(b);
  CHECK(f.alloc.stats().pending_free_blocks == 0);  // both idle: free at once, deterministically
  CHECK(f.backend->events.empty());
  CHECK(f.alloc.malloc(1000, stream(1)) == a);
}

TEST_CASE("statistics are exact: rounded bytes, peak, reserved", "[allocator]") {
  Fixture f;
  void* a = f.alloc.malloc(100, stream(1));
  void* b = f.alloc.malloc(5 * kMiB + 7, stream(1));
  // memory_allocated counts each request rounded to 512-byte blocks, the rule a Meta dry run
  // imitating CUDA uses (cuda_round_size).
  CHECK(f.stats.allocated.load() == static_cast<int64_t>(512 + 5 * kMiB + 512));
  CHECK(f.stats.allocated.load() ==
        static_cast<int64_t>(cuda_round_size(100) + cuda_round_size(5 * kMiB + 7)));
  CHECK(f.alloc.stats().requested_bytes == static_cast<int64_t>(100 + 5 * kMiB + 7));
  CHECK(f.stats.peak.load() == f.stats.allocated.load());
  f.alloc.free(b);
  CHECK(f.stats.allocated.load() == 512);
  CHECK(f.stats.peak.load() == static_cast<int64_t>(512 + 5 * kMiB + 512));
  f.stats.reset_peak();
  CHECK(f.stats.peak.load() == 512);
  CHECK(f.stats.reserved.load() == static_cast<int64_t>(2 * kMiB + 20 * kMiB));
  f.alloc.free(a);
  CHECK(f.stats.allocated.load() == 0);
}

TEST_CASE("empty_cache returns unused segments and keeps those with allocations", "[allocator]") {
  Fixture f;
  void* a = f.alloc.malloc(1000, stream(1));
  void* b = f.alloc.malloc(1000, stream(2));
  void* c = f.alloc.malloc(3 * kMiB, stream(1));
  f.alloc.free(b);
  f.alloc.free(c);
  f.alloc.empty_cache();
  cca::DeviceStats s = f.alloc.stats();
  CHECK(s.reserved_bytes == static_cast<int64_t>(2 * kMiB));  // a's segment stays
  CHECK(s.segments == 1);
  CHECK(s.device_frees == 2);
  CHECK(f.backend->live.size() == 1);
  f.alloc.free(a);
  f.alloc.empty_cache();
  CHECK(f.alloc.stats().reserved_bytes == 0);
  CHECK(f.backend->live.empty());
  CHECK(f.backend->allocs == f.backend->frees);
}

TEST_CASE("empty_cache waits for pending cross-stream frees", "[allocator]") {
  Fixture f;
  void* a = f.alloc.malloc(1000, stream(1));
  f.alloc.record_stream(a, stream(3));
  f.alloc.free(a);
  f.alloc.empty_cache();  // synchronizes the event, then frees the segment
  CHECK(f.alloc.stats().pending_free_blocks == 0);
  CHECK(f.alloc.stats().reserved_bytes == 0);
  CHECK(f.backend->events.empty());
}

TEST_CASE("out of memory: the cache is released and the allocation retried once", "[allocator]") {
  Fixture f;
  f.backend->capacity = 22 * kMiB;
  void* a = f.alloc.malloc(5 * kMiB, stream(1));
  f.alloc.free(a);  // cached: 20 MiB held
  void* b = f.alloc.malloc(5 * kMiB, stream(2));  // another stream: needs a new segment
  cca::DeviceStats s = f.alloc.stats();
  CHECK(s.alloc_retries == 1);
  CHECK(s.device_frees == 1);
  CHECK(s.reserved_bytes == static_cast<int64_t>(20 * kMiB));
  f.alloc.free(b);
}

TEST_CASE("out of memory after the retry throws, naming the sizes", "[allocator]") {
  Fixture f;
  f.backend->capacity = kMiB;
  REQUIRE_THROWS_WITH(f.alloc.malloc(2 * kMiB, stream(1)),
                      Catch::Contains("CUDA out of memory. Tried to allocate 2.00 MiB") &&
                          Catch::Contains("on cuda:0"));
  CHECK(f.alloc.stats().alloc_retries == 1);
  CHECK(f.alloc.stats().allocated_bytes == 0);
}

TEST_CASE("freeing or recording a pointer the allocator does not own throws", "[allocator]") {
  Fixture f;
  int x = 0;
  REQUIRE_THROWS_WITH(f.alloc.free(&x), Catch::Contains("was not allocated by it on cuda:0"));
  REQUIRE_THROWS_WITH(f.alloc.record_stream(&x, stream(1)),
                      Catch::Contains("is not the start of a live allocation"));
}


TEST_CASE("equal free blocks: the oldest segment's is taken, wherever the device put the segments", "[allocator]") {
  // Three 2 MiB segments, each with a free 1024-byte block between two live ones; the device
  // hands out addresses downwards, so the oldest segment has the highest address.
  Fixture f;
  f.backend->downwards = true;
  std::vector<void*> keep, holes;
  for (int seg = 0; seg < 3; ++seg) {
    void* first = f.alloc.malloc(1024, stream(1));
    void* hole = f.alloc.malloc(1024, stream(1));
    keep.push_back(first);
    keep.push_back(f.alloc.malloc(kMiB, stream(1)));  // these two fill the segment
    keep.push_back(f.alloc.malloc(kMiB - 2048, stream(1)));
    holes.push_back(hole);
  }
  REQUIRE(f.backend->allocs == 3);
  REQUIRE(holes[0] > holes[2]);  // c10 (lowest address) would take holes[2]
  for (void* h : holes) f.alloc.free(h);
  CHECK(f.alloc.malloc(1000, stream(1)) == holes[0]);
  CHECK(f.alloc.malloc(1000, stream(1)) == holes[1]);
  CHECK(f.alloc.malloc(1000, stream(1)) == holes[2]);
  for (void* h : holes) f.alloc.free(h);
  for (void* k : keep) f.alloc.free(k);
}

TEST_CASE("max_memory_reserved and segments: the peak of the segments held, reset with the allocated peak",
          "[allocator]") {
  Fixture f;
  void* a = f.alloc.malloc(3 * kMiB, stream(1));  // a 20 MiB segment
  void* b = f.alloc.malloc(100, stream(1));       // a 2 MiB one
  CHECK(f.stats.segments.load() == 2);
  CHECK(f.stats.peak_reserved.load() == static_cast<int64_t>(22 * kMiB));
  f.alloc.free(a);
  f.alloc.empty_cache();
  CHECK(f.stats.reserved.load() == static_cast<int64_t>(2 * kMiB));
  CHECK(f.stats.segments.load() == 1);
  CHECK(f.stats.peak_reserved.load() == static_cast<int64_t>(22 * kMiB));
  CHECK(f.alloc.stats().peak_reserved_bytes == static_cast<int64_t>(22 * kMiB));
  f.stats.reset_peak();
  CHECK(f.stats.peak_reserved.load() == static_cast<int64_t>(2 * kMiB));
  f.alloc.free(b);
}

// ---- a Meta dry run that imitates CUDA runs the same block logic ----

TEST_CASE("Meta imitating CUDA: reserved bytes, their peak and segments follow the caching allocator", "[allocator]") {
  DryRun dry(kCUDA);
  const Device meta{kMeta};
  const TensorOptions f32 = TensorOptions().device(kMeta);
  {
    Tensor small = empty({250}, f32);             // 1000 bytes: a 2 MiB small segment
    Tensor large = empty({3 * 1024 * 256}, f32);  // 3 MiB: a 20 MiB large segment
    CHECK(memory_allocated(meta) == 1024 + static_cast<int64_t>(3 * kMiB));
    CHECK(memory_reserved(meta) == static_cast<int64_t>(22 * kMiB));
    CHECK(memory_segments(meta) == 2);
    CHECK(small.data_ptr() == nullptr);  // a block address is kept for the free, never shown
    Tensor next = empty({5 * 1024 * 256}, f32);  // 5 MiB: split from the 20 MiB segment's rest
    CHECK(memory_segments(meta) == 2);
    Tensor big = empty({13 * 1024 * 256 + 1}, f32);  // 13 MiB + 4 bytes: more than the 12 MiB rest, so
    CHECK(memory_reserved(meta) == static_cast<int64_t>(36 * kMiB));  // a segment of its own, 14 MiB
    CHECK(memory_segments(meta) == 3);
  }
  CHECK(memory_allocated(meta) == 0);
  CHECK(memory_reserved(meta) == static_cast<int64_t>(36 * kMiB));  // cached, as on the device
  CHECK(max_memory_reserved(meta) == static_cast<int64_t>(36 * kMiB));
  {
    Tensor again = empty({4 * 1024 * 256}, f32);  // served from the cache
    CHECK(memory_reserved(meta) == static_cast<int64_t>(36 * kMiB));
  }
  empty_cache(meta);
  CHECK(memory_reserved(meta) == 0);
  CHECK(memory_segments(meta) == 0);
  CHECK(max_memory_reserved(meta) == static_cast<int64_t>(36 * kMiB));
  reset_peak_memory_stats(meta);
  CHECK(max_memory_reserved(meta) == 0);
}

TEST_CASE("Meta imitating CUDA: the same reserved bytes as the allocator over a device, after every step",
          "[allocator]") {
  // A random sequence of allocations and frees (sizes from 1 byte to 24 MiB), run on Meta tensors
  // and on the block logic over the fake device, which places segments in random order.
  std::mt19937_64 rng(7);
  Fixture f;
  f.backend->shuffled = true;
  DryRun dry(kCUDA);
  const Device meta{kMeta};
  std::vector<std::pair<Tensor, void*>> live;
  int64_t steps = 0, peak_segments = 0;
  for (int i = 0; i < 600; ++i) {
    const bool alloc = live.empty() || rng() % 5 < 3;
    if (alloc) {
      const int64_t bytes = rng() % 4 == 0 ? static_cast<int64_t>(rng() % (24 * kMiB)) + 1
                                           : static_cast<int64_t>(rng() % (64 * 1024)) + 1;
      live.emplace_back(empty({bytes}, TensorOptions().dtype(kBool).device(kMeta)),
                        f.alloc.malloc(static_cast<size_t>(bytes), stream(1)));
    } else {
      const size_t k = static_cast<size_t>(rng() % live.size());
      f.alloc.free(live[k].second);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
    if (i == 300) {
      empty_cache(meta);
      f.alloc.empty_cache();
    }
    INFO("step " << i);
    REQUIRE(memory_reserved(meta) == f.stats.reserved.load());
    REQUIRE(memory_segments(meta) == f.stats.segments.load());
    REQUIRE(memory_allocated(meta) == f.stats.allocated.load());
    peak_segments = std::max(peak_segments, memory_segments(meta));
    ++steps;
  }
  CHECK(max_memory_reserved(meta) == f.stats.peak_reserved.load());
  CHECK(peak_segments > 5);  // the sequence really fragments the cache
  CHECK(f.alloc.stats().splits > 0);
  for (auto& [t, p] : live) f.alloc.free(p);
  CHECK(steps == 600);
}

TEST_CASE("Meta imitating CUDA: dry runs keep their own caches; counting like the CPU again drops it",
          "[allocator]") {
  const Device meta{kMeta};
  DryRun outer(kCUDA);
  { Tensor t = empty({1000}, TensorOptions().device(kMeta)); }
  CHECK(memory_reserved(meta) == static_cast<int64_t>(2 * kMiB));
  {
    DryRun inner(kCUDA);
    CHECK(memory_reserved(meta) == 0);
    Tensor t = empty({3 * 1024 * 256}, TensorOptions().device(kMeta));
    CHECK(memory_reserved(meta) == static_cast<int64_t>(20 * kMiB));
  }
  CHECK(memory_reserved(meta) == static_cast<int64_t>(2 * kMiB));
  {
    MetaAccountingGuard cpu(kCPU);
    CHECK(memory_reserved(meta) == 0);  // the imitated cache went with the CUDA setting
    Tensor t = empty({1000}, TensorOptions().device(kMeta));
    CHECK(memory_allocated(meta) == 4000);
    CHECK(memory_reserved(meta) == 0);
  }
}
