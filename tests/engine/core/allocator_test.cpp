// Mirrors test/test_cuda.py (memory_allocated / max_memory_allocated / reset_peak_memory_stats).
// Tests engine/core/allocator.cpp (CPU/Meta allocators, exact statistics, observer, set_allocator).
#include <catch2/catch.hpp>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "remat.h"

using namespace remat;

TEST_CASE("memory_allocated grows by exactly the tensor's bytes and returns on free", "[allocator]") {
  const int64_t base = memory_allocated();
  {
    Tensor a = empty({3, 5});  // 15 floats
    REQUIRE(memory_allocated() - base == 60);
    {
      Tensor b = empty({7}, kDouble);
      REQUIRE(memory_allocated() - base == 60 + 56);
      Tensor view = b.view({7, 1});  // a view allocates nothing
      REQUIRE(memory_allocated() - base == 60 + 56);
    }
    REQUIRE(memory_allocated() - base == 60);
    Tensor big = empty({1000}, kBFloat16);  // past the small-allocation threshold: aligned path
    REQUIRE(memory_allocated() - base == 60 + 2000);
    REQUIRE(reinterpret_cast<uintptr_t>(big.data_ptr()) % 64 == 0);
  }
  REQUIRE(memory_allocated() == base);
  REQUIRE(memory_reserved() >= memory_allocated());  // live blocks, rounded, plus cached ones
}

// Whether this build recycles freed blocks (allocator.cpp turns it off under AddressSanitizer).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRecycles = false;
#else
constexpr bool kRecycles = true;
#endif

TEST_CASE("A freed large block is reused for the same size; empty_cache returns it", "[allocator]") {
  constexpr int64_t kBytes = 4 << 20;
  empty_cache();
  const int64_t reserved0 = memory_reserved(), allocated0 = memory_allocated();
  void* first = nullptr;
  {
    Tensor a = empty({kBytes / 4});
    first = a.data_ptr();
    REQUIRE(memory_allocated() - allocated0 == kBytes);
    REQUIRE(memory_reserved() - reserved0 == kBytes);
  }
  REQUIRE(memory_allocated() == allocated0);
  REQUIRE(memory_reserved() - reserved0 == (kRecycles ? kBytes : 0));  // cached, still held
  Tensor b = empty({kBytes / 4});
  if (kRecycles) REQUIRE(b.data_ptr() == first);  // the same block, no page faults
  REQUIRE(memory_reserved() - reserved0 == kBytes);
  Tensor c = empty({kBytes / 4 + 1});  // another size: a new block
  REQUIRE(c.data_ptr() != b.data_ptr());
  REQUIRE(memory_reserved() - reserved0 == 2 * kBytes + 4096);  // rounded to pages
  b.reset();
  c.reset();
  empty_cache();
  REQUIRE(memory_reserved() == reserved0);
  REQUIRE(memory_allocated() == allocated0);
}

namespace {
// The flags of the mapping holding p, as /proc/self/smaps lists them ("" when not found).
std::string mapping_flags(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}
}  // namespace

TEST_CASE("A block of 2 MiB or more starts on a 2 MiB boundary and asks for huge pages (c10's THP_MEM_ALLOC_ENABLE)",
          "[allocator]") {
  constexpr int64_t kHugePage = 2 << 20;
  Tensor big = empty({3 * kHugePage / 4});  // 3 huge pages of floats
  REQUIRE(reinterpret_cast<uintptr_t>(big.data_ptr()) % kHugePage == 0);
  Tensor small = empty({kHugePage / 4 - 1024});  // under 2 MiB: the 64-byte alignment only
  REQUIRE(reinterpret_cast<uintptr_t>(small.data_ptr()) % 64 == 0);
  // madvise(MADV_HUGEPAGE) marks the mapping "hg"; a kernel without transparent huge pages has no
  // such file and refuses the advice, which leaves 4 KiB pages.
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    const std::string flags = mapping_flags(big.data_ptr());
    INFO(flags);
    REQUIRE(flags.find(" hg") != std::string::npos);
  }
}

// Sizes no other test allocates, so that no block of theirs is cached when these start.
constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kTwoPerSlab = kMiB - 3 * 4096;       // two to a huge page, 24 KiB unused
constexpr int64_t kFourPerSlab = kMiB / 2 - 2 * 4096;  // four, 32 KiB unused

TEST_CASE("Blocks that pack a huge page (256 KiB to under 2 MiB) are carved from one 2 MiB slab", "[allocator]") {
  constexpr int64_t kHugePage = 2 << 20;
  empty_cache();
  const int64_t reserved0 = memory_reserved(), segments0 = memory_segments();
  Tensor a = empty({kTwoPerSlab / 4});
  const auto at = [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data_ptr()); };
  if (!kRecycles) {  // AddressSanitizer: every block its own, as the system gives it
    REQUIRE(memory_reserved() - reserved0 == kTwoPerSlab);
    return;
  }
  REQUIRE(at(a) % kHugePage == 0);  // the slab's first block
  REQUIRE(memory_reserved() - reserved0 == kHugePage);  // the whole page, reserved once
  REQUIRE(memory_segments() - segments0 == 1);
  Tensor b = empty({kTwoPerSlab / 4});
  REQUIRE(at(b) == at(a) + kTwoPerSlab);  // the second block of the same slab
  REQUIRE(memory_reserved() - reserved0 == kHugePage);
  Tensor c = empty({kTwoPerSlab / 4});  // a third: a second slab
  REQUIRE(at(c) % kHugePage == 0);
  REQUIRE(memory_reserved() - reserved0 == 2 * kHugePage);
  REQUIRE(memory_segments() - segments0 == 2);
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    const std::string flags = mapping_flags(a.data_ptr());
    INFO(flags);
    REQUIRE(flags.find(" hg") != std::string::npos);
  }
  std::vector<Tensor> four;  // 512 KiB less 8 KiB: four to a slab
  for (int i = 0; i < 4; ++i) four.push_back(empty({kFourPerSlab / 2}, kBFloat16));
  for (int i = 1; i < 4; ++i) REQUIRE(at(four[i]) == at(four[0]) + i * kFourPerSlab);
  REQUIRE(memory_reserved() - reserved0 == 3 * kHugePage);
  REQUIRE(memory_allocated() >= 3 * kTwoPerSlab + 4 * kFourPerSlab);
}

TEST_CASE("empty_cache returns a slab once every block of it is free, not before", "[allocator]") {
  constexpr int64_t kHugePage = 2 << 20;
  if (!kRecycles) return;  // no slabs under AddressSanitizer (the test above checks that)
  empty_cache();
  const int64_t reserved0 = memory_reserved(), segments0 = memory_segments();
  Tensor a = empty({kTwoPerSlab / 4}), b = empty({kTwoPerSlab / 4});
  const void* first = a.data_ptr();
  a.reset();
  REQUIRE(memory_reserved() - reserved0 == kHugePage);  // cached, b still in use
  empty_cache();
  REQUIRE(memory_reserved() - reserved0 == kHugePage);  // b holds the slab: nothing returned
  Tensor again = empty({kTwoPerSlab / 4});
  REQUIRE(again.data_ptr() == first);  // a's block, kept in the cache by empty_cache
  again.reset();
  b.reset();
  empty_cache();
  REQUIRE(memory_reserved() == reserved0);
  REQUIRE(memory_segments() == segments0);
  Tensor fresh = empty({kTwoPerSlab / 4});  // a new slab after the old one went back
  REQUIRE(memory_reserved() - reserved0 == kHugePage);
}

TEST_CASE("A size that would leave more than an eighth of a huge page unused keeps its own block", "[allocator]") {
  empty_cache();
  for (const int64_t bytes : {3 * kMiB / 2, int64_t{700} * 1024, int64_t{200} * 1024}) {  // one of 1.5 MiB; two of 700 KiB; small
    INFO(bytes);
    const int64_t reserved0 = memory_reserved();
    Tensor t = empty({bytes / 4});
    REQUIRE(memory_reserved() - reserved0 == bytes);  // its page-rounded size, no more
    REQUIRE(reinterpret_cast<uintptr_t>(t.data_ptr()) % 64 == 0);
  }
  empty_cache();
}

TEST_CASE("max_memory_allocated tracks the peak since reset_peak_memory_stats", "[allocator]") {
  const int64_t base = memory_allocated();
  reset_peak_memory_stats();
  REQUIRE(max_memory_allocated() == base);
  {
    Tensor a = empty({1000});  // 4000 bytes
    {
      Tensor b = empty({500}, kDouble);  // 4000 bytes
      REQUIRE(max_memory_allocated() == base + 8000);
    }
    REQUIRE(memory_allocated() == base + 4000);
    REQUIRE(max_memory_allocated() == base + 8000);  // the peak stays
    reset_peak_memory_stats();
    REQUIRE(max_memory_allocated() == base + 4000);  // reset to what is live now
  }
  REQUIRE(max_memory_allocated() == base + 4000);
  REQUIRE(memory_allocated() == base);
}

TEST_CASE("Zero-byte tensors allocate nothing; Meta tensors touch no memory but count like the CPU's", "[allocator]") {
  const int64_t cpu = memory_allocated();
  const int64_t meta = memory_allocated(Device{kMeta});
  Tensor z = empty({0, 4});
  REQUIRE(z.data_ptr() == nullptr);
  REQUIRE(memory_allocated() == cpu);
  {
    Tensor m = empty({1024, 1024}, Device{kMeta});
    REQUIRE(m.data_ptr() == nullptr);          // no memory behind it
    REQUIRE(m.nbytes() == 4 * 1024 * 1024);  // the metadata knows the size
    REQUIRE(memory_allocated() == cpu);
    REQUIRE(memory_allocated(Device{kMeta}) == meta + 4 * 1024 * 1024);  // and a dry run counts it
    Tensor odd = empty({3}, TensorOptions().dtype(kBFloat16).device(kMeta));
    REQUIRE(memory_allocated(Device{kMeta}) == meta + 4 * 1024 * 1024 + 6);  // the bytes asked for, as on CPU
    REQUIRE(max_memory_allocated(Device{kMeta}) >= meta + 4 * 1024 * 1024 + 6);
    Tensor none = empty({0}, Device{kMeta});
    REQUIRE(memory_allocated(Device{kMeta}) == meta + 4 * 1024 * 1024 + 6);
  }
  REQUIRE(memory_allocated(Device{kMeta}) == meta);
  reset_peak_memory_stats(Device{kMeta});
  REQUIRE(max_memory_allocated(Device{kMeta}) == meta);
}

TEST_CASE("A Meta run told to imitate CUDA counts the CUDA caching allocator's 512-byte blocks", "[allocator]") {
  REQUIRE(meta_accounting() == kCPU);
  REQUIRE(memory_allocated(Device{kMeta}) == 0);
  {
    MetaAccountingGuard like_cuda(kCUDA);
    REQUIRE(meta_accounting() == kCUDA);
    Tensor a = empty({1}, Device{kMeta});        // 4 bytes: one 512-byte block
    Tensor b = empty({1000}, Device{kMeta});     // 4000 bytes: 4096
    Tensor c = empty({128}, Device{kMeta});      // 512 bytes exactly: 512
    Tensor d = empty({0}, Device{kMeta});        // nothing
    REQUIRE(memory_allocated(Device{kMeta}) == 512 + 4096 + 512);
    REQUIRE(memory_allocated(Device{kMeta}) ==
            static_cast<int64_t>(cuda_round_size(4) + cuda_round_size(4000) + cuda_round_size(512)));
    REQUIRE(cuda_round_size(1) == 512);
    REQUIRE(cuda_round_size(513) == 1024);
    REQUIRE(cuda_round_size((size_t{1} << 20) + 1) == (size_t{1} << 20) + 512);
    REQUIRE_THROWS_WITH(set_meta_accounting(kCPU),
                        Catch::Contains("set_meta_accounting: cannot change what the Meta device counts while Meta "
                                        "tensors are alive (5120 bytes allocated on meta)"));
  }
  REQUIRE(meta_accounting() == kCPU);
  REQUIRE(memory_allocated(Device{kMeta}) == 0);
  REQUIRE_THROWS_WITH(set_meta_accounting(kMeta),
                      Catch::Contains("set_meta_accounting: a Meta run imitates cpu or cuda, not meta"));
}

TEST_CASE("A dry run's running totals cannot overflow: past int64 less 1 GiB an allocation is refused, naming them",
          "[allocator]") {
  const int64_t quarter = int64_t{1} << 60;  // f32 elements: 2^62 bytes
  const std::string limit = "9223372035781033983";  // int64's maximum less 1 GiB
  for (DeviceType like : {kCPU, kCUDA}) {
    INFO(toString(like));
    DryRun dry(like);
    Tensor a = empty({quarter}, Device{kMeta});  // below the limit: counted
    REQUIRE(memory_allocated(Device{kMeta}) == int64_t{1} << 62);
    // Another would have wrapped memory_allocated (and memory_reserved) past int64.
    REQUIRE_THROWS_WITH(empty({quarter}, Device{kMeta}),
                        "dry run (Meta device): allocating 4611686018427387904 bytes (counted as 4611686018427387904) "
                        "would bring memory_allocated from 4611686018427387904 past " + limit +
                            " bytes (int64's maximum less 1 GiB, the most a dry run counts)");
    // One byte past the limit, without overflowing int64.
    const int64_t rest = (int64_t{1} << 62) - (int64_t{1} << 30);  // a multiple of 512: CUDA counts it as is
    REQUIRE_THROWS_WITH(empty({rest}, TensorOptions().dtype(kBool).device(kMeta)),
                        "dry run (Meta device): allocating " + std::to_string(rest) + " bytes (counted as " +
                            std::to_string(rest) + ") would bring memory_allocated from 4611686018427387904 past " +
                            limit + " bytes (int64's maximum less 1 GiB, the most a dry run counts)");
    REQUIRE(memory_allocated(Device{kMeta}) == int64_t{1} << 62);  // nothing counted by the refusals
  }
}

TEST_CASE("Storage observers see allocations, frees and changes of category with the bytes counted", "[allocator]") {
  std::vector<StorageEvent> events;
  int id = add_storage_observer([&](const StorageEvent& e) { events.push_back(e); });
  const int64_t base = memory_allocated(Device{kMeta});
  {
    Tensor t = empty({4}, Device{kMeta});     // 16 bytes, Other (no phase is set)
    claim_memory(t, MemoryCategory::Activation);
    claim_memory(t, MemoryCategory::Temporary);  // ranks after Activation: ignored
    REQUIRE(t.impl()->storage()->memory_category() == MemoryCategory::Activation);
  }
  remove_storage_observer(id);
  Tensor after = empty({2}, Device{kMeta});  // not observed any more
  REQUIRE(events.size() == 4);
  CHECK(events[0].delta == 16);
  CHECK(events[0].category == MemoryCategory::Other);
  CHECK(events[0].allocated == base + 16);
  CHECK(!events[0].relabel);
  CHECK(events[1].delta == -16);
  CHECK(events[1].category == MemoryCategory::Other);
  CHECK(events[1].relabel);
  CHECK(events[2].delta == 16);
  CHECK(events[2].category == MemoryCategory::Activation);
  CHECK(events[2].relabel);
  CHECK(events[2].allocated == base + 16);
  CHECK(events[3].delta == -16);
  CHECK(events[3].category == MemoryCategory::Activation);
  CHECK(events[3].allocated == base);
  CHECK(events[0].storage == events[3].storage);
}

TEST_CASE("The allocation observer sees every allocation and free with its device", "[allocator]") {
  std::vector<std::pair<Device, int64_t>> events;
  set_allocation_observer([&](Device d, int64_t n) { events.emplace_back(d, n); });
  {
    Tensor a = empty({3}, kDouble);
    Tensor m = empty({3}, Device{kMeta});  // Meta allocates no memory: no allocator event
  }
  set_allocation_observer(nullptr);
  Tensor after = empty({2});  // not observed any more
  REQUIRE(events.size() == 2);
  REQUIRE(events[0].first == Device{kCPU});
  REQUIRE(events[0].second == 24);
  REQUIRE(events[1].first == Device{kCPU});
  REQUIRE(events[1].second == -24);
}

namespace {
// Forwards to the previous allocator and counts calls (what a custom memory pool would do).
class CountingAllocator final : public Allocator {
 public:
  explicit CountingAllocator(Allocator* inner) : inner_(inner) {}
  void* allocate(Device d, size_t n) override {
    ++allocations;
    bytes += static_cast<int64_t>(n);
    return inner_->allocate(d, n);
  }
  void deallocate(Device d, void* p, size_t n) override {
    ++frees;
    bytes -= static_cast<int64_t>(n);
    inner_->deallocate(d, p, n);
  }
  AllocatorStats& stats(Device d) override { return inner_->stats(d); }
  int allocations = 0, frees = 0;
  int64_t bytes = 0;

 private:
  Allocator* inner_;
};
}  // namespace

TEST_CASE("set_allocator replaces a device's allocator; storages free through the one that made them",
          "[allocator]") {
  Allocator* original = get_allocator(Device{kCPU});
  Tensor before = empty({4});  // made by the original allocator
  CountingAllocator counting(original);
  REQUIRE(set_allocator(kCPU, &counting) == original);
  {
    Tensor a = empty({8});
    REQUIRE(counting.allocations == 1);
    REQUIRE(counting.bytes == 32);
    before.reset();  // freed by the original allocator, not the counting one
    REQUIRE(counting.frees == 0);
  }
  REQUIRE(counting.frees == 1);
  REQUIRE(counting.bytes == 0);
  REQUIRE(set_allocator(kCPU, original) == &counting);
  Tensor later = empty({4});
  REQUIRE(counting.allocations == 1);
}

#ifndef REMAT_CUDA
TEST_CASE("Without a CUDA build there is no CUDA allocator, and the error says how to get one", "[allocator]") {
  REQUIRE_THROWS_WITH(get_allocator(Device(kCUDA, 0)),
                      "no allocator for device cuda:0 (remat was built without CUDA; build with --config=cuda)");
}
#endif
