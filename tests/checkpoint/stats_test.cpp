// Tests checkpoint/stats.{h,cpp} where it meets engine/core/dry_run.h: checkpoint_stats() and
// reset_checkpoint_stats() see the calling thread's current dry run only, so a dry run's
// recompute figures are its own and a real step's are not disturbed by dry runs elsewhere.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "remat.h"

using namespace remat;

namespace {

// One checkpointed region on `device`, backward run: one recomputation of two ops.
void checkpointed_step(Device device) {
  TensorOptions o = TensorOptions().device(device);
  Tensor x = (device.is_meta() ? empty({4, 4}, o) : ones({4, 4}, o)).requires_grad_();
  Tensor y = checkpoint([](const Tensor& h) { return h.sin().exp(); }, x);
  sum(y).backward();
}

}  // namespace

TEST_CASE("checkpoint_stats: inside a dry run, its own regions; outside, the others", "[stats][dry_run]") {
  reset_checkpoint_stats();
  checkpointed_step(Device{kCPU});
  const CheckpointStats outside = checkpoint_stats();
  REQUIRE(outside.total.recomputations == 1);
  {
    DryRun dry;
    CHECK(checkpoint_stats().regions.empty());
    checkpointed_step(Device{kMeta});
    checkpointed_step(Device{kMeta});
    CHECK(checkpoint_stats().total.recomputations == 2);
    CHECK(checkpoint_stats().regions.size() == 2);
    reset_checkpoint_stats();  // resets the dry run's only
    CHECK(checkpoint_stats().total.recomputations == 0);
    checkpointed_step(Device{kMeta});
    CHECK(checkpoint_stats().total.recomputations == 1);
  }
  CHECK(checkpoint_stats().total.recomputations == outside.total.recomputations);
  CHECK(checkpoint_stats().regions.size() == outside.regions.size());
  {
    DryRun again;  // a closed dry run's regions are gone
    CHECK(checkpoint_stats().regions.empty());
  }
}

TEST_CASE("checkpoint_stats: dry runs in other threads neither add to nor reset a real step's figures",
          "[stats][dry_run][threads]") {
  reset_checkpoint_stats();
  std::atomic<bool> stop{false};
  std::atomic<int> dry_steps{0};
  std::vector<int64_t> dry_recomputations;
  std::thread dry_thread([&] {
    while (!stop.load() || dry_steps.load() < 3) {
      DryRun dry;
      reset_checkpoint_stats();
      checkpointed_step(Device{kMeta});
      dry_recomputations.push_back(checkpoint_stats().total.recomputations);
      ++dry_steps;
    }
  });
  for (int i = 0; i < 5; ++i) checkpointed_step(Device{kCPU});
  stop = true;
  dry_thread.join();
  const CheckpointStats real = checkpoint_stats();
  CHECK(real.total.recomputations == 5);
  CHECK(real.regions.size() == 5);
  CHECK(real.total.ops_recomputed == 10);
  CHECK(dry_recomputations == std::vector<int64_t>(dry_recomputations.size(), 1));
}
