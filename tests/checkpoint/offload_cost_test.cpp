// Tests checkpoint/offload_cost.{h,cpp}: the transfer model's exposed seconds on hand-made
// regions, at 1 byte/s so that bytes read as seconds.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "checkpoint/offload_cost.h"

using namespace remat::planner_detail;

namespace {

Data::Call call(const std::string& key, int64_t bytes, double cost) {
  Data::Call c;
  c.key = key;
  c.op = "aten::mm";
  c.bytes = bytes;
  c.cost = cost;
  c.needed = true;
  return c;
}

// Two regions of one step, "l0" (c0: 2 bytes, 1 s; c1: 1 byte, 3 s) and "l1" (c2: 1 byte, 0.5 s),
// repeated `steps` times (a scope seen again starts the next step).
Data two_regions(int steps = 1) {
  Data d;
  d.calls = {call("c0", 2, 1), call("c1", 1, 3), call("c2", 1, 0.5)};
  for (int s = 0; s < steps; ++s) {
    d.regions.push_back(Data::Region{"l0", {0, 1}, 0, 0, 0});
    d.regions.push_back(Data::Region{"l1", {2}, 0, 0, 0});
  }
  return d;
}

}  // namespace

TEST_CASE("transfer_cost: a copy to host hides behind the rest of its region's forward", "[planner][offload]") {
  const Data d = two_regions();
  // c0's copy runs from t=1 to 3, the region's forward ends at 4: nothing exposed forward. Its copy
  // back (2 s) hides behind l1's backward (2 x 0.5 s), l1 rerunning: 1 s exposed.
  TransferCost c0 = transfer_cost(d, {false, false, false}, {true, false, false}, 1.0);
  CHECK(c0.exposed_seconds == 1.0);
  CHECK(c0.bytes == 2);
  // c1's copy starts at 4, when the forward ends: 1 s exposed; back, 1 s under l1's 1 s backward.
  CHECK(transfer_cost(d, {false, false, false}, {false, true, false}, 1.0).exposed_seconds == 1.0);
  // Both: the copies queue (c0 1..3, c1 4..5): 1 s forward; back 3 s under 1 s: 2 s.
  CHECK(transfer_cost(d, {false, false, false}, {true, true, false}, 1.0).exposed_seconds == 3.0);
  // Twice the bandwidth, half the copies: c0 1..2, hidden; back 1 s under 1 s, hidden.
  CHECK(transfer_cost(d, {false, false, false}, {true, false, false}, 2.0).exposed_seconds == 0.0);
}

TEST_CASE("transfer_cost: no later region reruns, nothing hides the copy back; steps are priced apart",
          "[planner][offload]") {
  const Data d = two_regions();
  // l1 keeps all it needs: it is not rerun, so l0's tensors come back at l0's own rerun: 2 s exposed.
  CHECK(transfer_cost(d, {false, false, true}, {true, false, false}, 1.0).exposed_seconds == 2.0);
  // Offloading l1's own output: the last region of the step has no later region to hide behind.
  // Forward: c2's copy 0.5..1.5 after a 0.5 s forward (1 s); back 1 s, unhidden.
  CHECK(transfer_cost(d, {false, false, false}, {false, false, true}, 1.0).exposed_seconds == 2.0);
  // Two steps: each step's regions alike, the second step's l0 not hiding the first's l1.
  const Data two = two_regions(2);
  CHECK(transfer_cost(two, {false, false, false}, {true, false, true}, 1.0).exposed_seconds == 2 * 3.0);
  CHECK(transfer_cost(two, {false, false, false}, {true, false, true}, 1.0).bytes == 2 * 3);
  // From the second step on only (a step that resets checkpoint_stats() per training step).
  CHECK(transfer_cost(two, {false, false, false}, {true, false, true}, 1.0, 2).exposed_seconds == 3.0);
  // Nothing offloaded: nothing to price, whatever the bandwidth.
  CHECK(transfer_cost(d, {false, false, false}, {}, 0.0).exposed_seconds == 0.0);
}

TEST_CASE("transfer_cost: a bandwidth that is not positive is an error naming it", "[planner][offload][errors]") {
  const Data d = two_regions();
  CHECK_THROWS_WITH(transfer_cost(d, {false, false, false}, {true, false, false}, 0.0),
                    "transfer_cost: the host link bandwidth must be positive, got 0 bytes/s");
}
