// Tests engine/core/dry_run.{h,cpp}: a DryRun owns the Meta device's counters, its accounting and
// its storage observers; Meta storages count their frees where they were allocated; the real
// devices keep process-wide statistics. Several tests run dry runs in threads at once.
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/core/dry_run.h"
#include "remat.h"

using namespace remat;

namespace {

const Device kMetaDevice{kMeta};

// A deterministic Meta workload: allocations and frees whose peak is known; returns the peak
// seen by max_memory_allocated at its end, counted from its start.
int64_t meta_workload(int64_t scale, int repeats) {
  const int64_t start = memory_allocated(kMetaDevice);
  reset_peak_memory_stats(kMetaDevice);
  for (int r = 0; r < repeats; ++r) {
    Tensor a = empty({scale, 8}, kMetaDevice);        // 32 * scale bytes
    Tensor b = empty({scale, 16}, kMetaDevice);       // 64 * scale
    { Tensor c = empty({scale, 32}, kMetaDevice); }   // 128 * scale, freed at once
    Tensor d = empty({scale}, kMetaDevice);           // 4 * scale
  }
  return max_memory_allocated(kMetaDevice) - start;
}

}  // namespace

TEST_CASE("DryRun: the Meta counters inside are the dry run's own; outside, the thread's previous ones",
          "[dry_run]") {
  const int64_t outer = memory_allocated(kMetaDevice);
  Tensor before = empty({100}, kMetaDevice);  // 400 bytes in the process-wide state
  REQUIRE(memory_allocated(kMetaDevice) == outer + 400);
  const uint64_t process_id = current_dry_run().id;
  CHECK(process_id == 0);
  CHECK(&current_dry_run() == &process_dry_run());
  {
    DryRun dry;
    CHECK(dry.id() != 0);
    CHECK(&current_dry_run() == &dry.state());
    CHECK(memory_allocated(kMetaDevice) == 0);
    CHECK(max_memory_allocated(kMetaDevice) == 0);
    Tensor inside = empty({10}, kMetaDevice);
    CHECK(memory_allocated(kMetaDevice) == 40);
    before = Tensor();  // freed inside, counted in the state it was allocated in
    CHECK(memory_allocated(kMetaDevice) == 40);
    {
      DryRun nested(kCUDA);
      CHECK(memory_allocated(kMetaDevice) == 0);
      Tensor n = empty({1}, kMetaDevice);
      CHECK(memory_allocated(kMetaDevice) == 512);  // a CUDA block
      CHECK(meta_accounting() == kCUDA);
    }
    CHECK(meta_accounting() == kCPU);
    CHECK(memory_allocated(kMetaDevice) == 40);
    CHECK(max_memory_allocated(kMetaDevice) == 40);
  }
  CHECK(memory_allocated(kMetaDevice) == outer);
  CHECK(current_dry_run().id == process_id);
}

TEST_CASE("DryRun: a Meta tensor that outlives its dry run counts its free there, from any thread", "[dry_run]") {
  Tensor kept;
  intrusive_ptr<DryRunState> state;
  const int64_t outer = memory_allocated(kMetaDevice);
  {
    DryRun dry;
    state = intrusive_ptr<DryRunState>(&dry.state());
    kept = empty({25}, kMetaDevice);
    CHECK(state->stats.allocated.load() == 100);
  }
  CHECK(memory_allocated(kMetaDevice) == outer);  // not counted in the thread's state
  CHECK(state->stats.allocated.load() == 100);
  int64_t charged = -1;
  std::thread([&] {
    DryRun other;  // the freeing thread's own dry run is not charged
    kept = Tensor();
    charged = memory_allocated(kMetaDevice);
  }).join();
  CHECK(charged == 0);
  CHECK(state->stats.allocated.load() == 0);
  CHECK(state->stats.peak.load() == 100);
}

TEST_CASE("DryRun: dry runs in several threads at once give exactly what each gives alone", "[dry_run][threads]") {
  constexpr int kThreads = 4;
  std::vector<int64_t> alone(kThreads), together(kThreads), left(kThreads, -1);
  for (int t = 0; t < kThreads; ++t) {
    DryRun dry;
    alone[t] = meta_workload(64 * (t + 1), 50);
  }
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      DryRun dry;
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();  // start together
      together[t] = meta_workload(64 * (t + 1), 50);
      left[t] = memory_allocated(kMetaDevice);  // Catch2 asserts in the main thread only
    });
  }
  for (std::thread& th : threads) th.join();
  CHECK(together == alone);
  CHECK(left == std::vector<int64_t>(kThreads, 0));
  CHECK(alone[0] == 64 * (32 + 64 + 128));  // a, b and c alive at once
}

TEST_CASE("DryRun: each dry run counts like its own device; set_meta_accounting acts on the current one",
          "[dry_run][threads]") {
  std::atomic<bool> cuda_alive{false}, done{false};
  int64_t counted_there = 0;
  std::thread cuda_thread([&] {
    DryRun dry(kCUDA);
    Tensor t = empty({1}, kMetaDevice);
    counted_there = memory_allocated(kMetaDevice);
    cuda_alive = true;
    while (!done.load()) std::this_thread::yield();
  });
  while (!cuda_alive.load()) std::this_thread::yield();
  {
    DryRun dry;  // the other thread's live CUDA-counted tensor does not bind this one
    CHECK(meta_accounting() == kCPU);
    set_meta_accounting(kCUDA);
    CHECK(meta_accounting() == kCUDA);
    Tensor t = empty({1}, kMetaDevice);
    CHECK(memory_allocated(kMetaDevice) == 512);
    REQUIRE_THROWS_WITH(set_meta_accounting(kCPU),
                        Catch::Contains("cannot change what the Meta device counts while Meta tensors are alive (512 "
                                        "bytes allocated on meta)"));
  }
  done = true;
  cuda_thread.join();
  CHECK(counted_there == 512);
  CHECK(meta_accounting() == kCPU);
  REQUIRE_THROWS_WITH(DryRun(kMeta), Catch::Contains("DryRun: a dry run counts like cpu or cuda, not meta"));
}

TEST_CASE("DryRun: observers added inside see its Meta storages only, and are removed when it closes",
          "[dry_run][threads]") {
  std::vector<StorageEvent> mine, real;
  std::atomic<bool> other_ran{false};
  int id = -1;
  {
    DryRun dry;
    id = add_storage_observer([&](const StorageEvent& e) { (e.device.is_meta() ? mine : real).push_back(e); });
    CHECK(has_storage_observers());
    CHECK(has_storage_observers(kMetaDevice));
    std::thread([&] {
      DryRun other;
      Tensor t = empty({8}, kMetaDevice);  // another dry run's: not seen
      other_ran = true;
    }).join();
    { Tensor t = empty({4}, kMetaDevice); }
    { Tensor c = empty({2}, kDouble); }  // the real devices' events reach it, process-wide
  }
  CHECK(other_ran.load());
  REQUIRE(mine.size() == 2);
  CHECK(mine[0].delta == 16);
  CHECK(mine[0].allocated == 16);
  CHECK(mine[1].delta == -16);
  REQUIRE(real.size() == 2);
  CHECK(real[0].delta == 16);
  CHECK(real[0].device == Device{kCPU});
  // Closed: removed from both lists (removing it again is a no-op).
  { Tensor c = empty({2}, kDouble); }
  { Tensor t = empty({4}, kMetaDevice); }
  CHECK(real.size() == 2);
  CHECK(mine.size() == 2);
  remove_storage_observer(id);
  CHECK(!has_storage_observers(kMetaDevice));
}

TEST_CASE("DryRun: a device-bound observer sees that kind of device only", "[dry_run]") {
  std::vector<Device> seen_meta, seen_real;
  DryRun dry;
  int m = add_storage_observer(kMetaDevice, [&](const StorageEvent& e) { seen_meta.push_back(e.device); });
  CHECK(has_storage_observers(kMetaDevice));
  { Tensor c = empty({3}, kFloat); }
  { Tensor t = empty({3}, kMetaDevice); }
  remove_storage_observer(m);
  CHECK(!has_storage_observers(kMetaDevice));
  int r = add_storage_observer(Device{kCPU}, [&](const StorageEvent& e) { seen_real.push_back(e.device); });
  CHECK(!has_storage_observers(kMetaDevice));
  { Tensor c = empty({3}, kFloat); }
  { Tensor t = empty({3}, kMetaDevice); }
  remove_storage_observer(r);
  CHECK(seen_meta == std::vector<Device>{kMetaDevice, kMetaDevice});
  CHECK(seen_real == std::vector<Device>{Device{kCPU}, Device{kCPU}});
}

TEST_CASE("DryRun: the real devices keep process-wide statistics", "[dry_run][threads]") {
  const int64_t cpu = memory_allocated(Device{kCPU});
  Tensor from_other_thread;
  std::thread([&] {
    DryRun dry;
    from_other_thread = empty({256}, kFloat);  // a CPU tensor made inside a dry run
  }).join();
  CHECK(memory_allocated(Device{kCPU}) == cpu + 1024);
  {
    DryRun dry;
    CHECK(memory_allocated(Device{kCPU}) == cpu + 1024);  // the same figure inside a dry run
  }
  from_other_thread = Tensor();
  CHECK(memory_allocated(Device{kCPU}) == cpu);
}

namespace {
std::mutex g_closed_mutex;
std::vector<uint64_t> g_closed;
void record_closed(uint64_t id) {
  std::lock_guard<std::mutex> lock(g_closed_mutex);
  g_closed.push_back(id);
}
}  // namespace

TEST_CASE("DryRun: layers above are told when a dry run closes", "[dry_run]") {
  add_dry_run_closed_hook(&record_closed);
  uint64_t id = 0;
  {
    DryRun dry;
    id = dry.id();
    std::lock_guard<std::mutex> lock(g_closed_mutex);
    CHECK(g_closed.empty());
  }
  std::lock_guard<std::mutex> lock(g_closed_mutex);
  CHECK(g_closed == std::vector<uint64_t>{id});
}
