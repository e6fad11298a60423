// Tests of checkpoint/device_state.cpp.
#include <catch2/catch.hpp>

#include "remat.h"
#include "checkpoint/device_state.h"

using namespace remat;

TEST_CASE("RestoreDeviceStateGuard replays the captured RNG and autocast state, then restores", "[device_state]") {
  manual_seed(11);
  CapturedDeviceState captured;
  {
    autocast guard(kCPU, kBFloat16);
    captured = CapturedDeviceState::capture({}, true);
  }
  Tensor first = rand({8});
  RngState after_first = get_rng_state();
  {
    RestoreDeviceStateGuard restore(captured);
    REQUIRE(is_autocast_enabled(kCPU));
    REQUIRE(equal(rand({8}), first));  // the same draw again
  }
  REQUIRE_FALSE(is_autocast_enabled(kCPU));
  REQUIRE(get_rng_state() == after_first);  // fork_rng: the outside stream continues untouched
}

TEST_CASE("preserve_rng_state = false leaves the RNG alone", "[device_state]") {
  manual_seed(12);
  CapturedDeviceState captured = CapturedDeviceState::capture({}, false);
  Tensor a = rand({4});
  RngState now = get_rng_state();
  {
    RestoreDeviceStateGuard restore(captured);
    REQUIRE(get_rng_state() == now);
  }
}
