// Tests engine/cuda/caching_allocator.{h,cpp}. The caching logic runs over a host-memory fake
// backend (these cases run without a GPU); the last cases check the real kCUDA allocator
// through tensors and skip without a device.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <set>

#include "engine/cuda/caching_allocator.h"
#include "engine/cuda/cuda_functions.h"
#include "engine/cuda/cuda_guard.h"
#include "engine/cuda/cuda_stream.h"
#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;
namespace cca = remat::cuda::CUDACachingAllocator;

namespace {

constexpr size_t kMiB = 1024 * 1024;

// Host memory standing in for a device; events complete when the test says so.
class FakeBackend final : public cca::DeviceBackend {
 public:
  struct Event {
    bool done = false;
    cudaStream_t stream = nullptr;
  };
  size_t capacity = SIZE_MAX;
  size_t used = 0;
  int allocs = 0, frees = 0;
  std::map<void*, size_t> live;
  std::set<Event*> events;

  void* raw_alloc(size_t n) override {
    if (used + n > capacity) return nullptr;
    void* p = std::aligned_alloc(512, n);
    used += n;
    live[p] = n;
    ++allocs;
    return p;
  }
  void raw_free(void* p) override {
    REQUIRE(live.count(p) == 1);
    used -= live[p];
    live.erase(p);
    std::free(p);
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
  void record_event(void* e, cudaStream_t s) override {
    static_cast<Event*>(e)->stream = s;
    static_cast<Event*>(e)->done = false;
  }
  bool query_event(void* e) override { return static_cast<Event*>(e)->done; }
  void synchronize_event(void* e) override { static_cast<Event*>(e)->done = true; }
  void complete_all() {
    for (Event* e : events) e->done = true;
  }
};

cudaStream_t stream(int i) { return reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(0x1000 * i)); }

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

// ---- the real kCUDA allocator ----

TEST_CASE("kCUDA allocator: memory_allocated counts the live tensors' rounded blocks exactly", "[allocator][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device d = testing::cuda0();
  cuda::device_synchronize();
  const int64_t base = memory_allocated(d);
  {
    Tensor a = empty({1000}, TensorOptions().device(d));           // 4000 bytes: a 4096-byte block
    Tensor b = empty({3, 7}, TensorOptions().dtype(kHalf).device(d));  // 42 bytes: a 512-byte block
    CHECK(memory_allocated(d) == base + 4096 + 512);
    CHECK(max_memory_allocated(d) >= base + 4096 + 512);
    CHECK(memory_reserved(d) >= memory_allocated(d));
  }
  CHECK(memory_allocated(d) == base);
  reset_peak_memory_stats(d);
  CHECK(max_memory_allocated(d) == base);
}

TEST_CASE("kCUDA allocator: a freed block is handed out again without cudaMalloc", "[allocator][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device d = testing::cuda0();
  void* first = nullptr;
  {
    Tensor a = empty({256, 256}, TensorOptions().device(d));
    first = a.data_ptr();
  }
  const int64_t allocs = cca::get_device_stats(0).device_allocs;
  Tensor b = empty({256, 256}, TensorOptions().device(d));
  CHECK(b.data_ptr() == first);
  CHECK(cca::get_device_stats(0).device_allocs == allocs);
}

TEST_CASE("kCUDA allocator: empty_cache gives unused segments back", "[allocator][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device d = testing::cuda0();
  { Tensor a = empty({64, 1024, 1024}, TensorOptions().device(d)); }  // 256 MiB, now cached
  CHECK(memory_reserved(d) >= static_cast<int64_t>(256 * kMiB));
  const int64_t live = memory_allocated(d);
  cuda::empty_cache();
  // Only segments that still hold live tensors remain.
  CHECK(memory_reserved(d) < static_cast<int64_t>(256 * kMiB) + live + static_cast<int64_t>(64 * kMiB));
}

TEST_CASE("kCUDA allocator: record_stream keeps memory from reuse until the other stream is done",
          "[allocator][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device d = testing::cuda0();
  cuda::CUDAStream side = cuda::getStreamFromPool();
  void* p = nullptr;
  {
    Tensor a = full({1 << 20}, 1.0, TensorOptions().device(d));
    p = a.data_ptr();
    cuda::device_synchronize();  // a is written before the side stream reads it
    {
      cuda::CUDAStreamGuard guard(side);
      Tensor b = mul(a, 2.0);  // a is used on the side stream
      (void)b;
    }
    cca::record_stream(a, side);
  }
  side.synchronize();
  // After the side stream finished, the block is reusable on the default stream.
  Tensor c = empty({1 << 20}, TensorOptions().device(d));
  Tensor e = empty({1 << 20}, TensorOptions().device(d));
  CHECK((c.data_ptr() == p || e.data_ptr() == p));
}

TEST_CASE("kCUDA allocator: copies between host and device round-trip", "[allocator][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor host = arange(1000, TensorOptions().dtype(kFloat));
  Tensor dev = host.to(testing::cuda0());
  CHECK(dev.is_cuda());
  CHECK(equal(dev.to(Device{kCPU}), host));
}
