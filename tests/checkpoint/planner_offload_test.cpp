// Tests checkpoint/planner_offload.{h,cpp}: the offload phases on hand-made calls, priced by a
// fake pricer instead of dry runs (tests/testing/planner_data.h).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "checkpoint/planner_offload.h"
#include "tests/testing/planner_data.h"

using namespace remat::planner_detail;
using remat::testing::FakePricer;
using remat::testing::one_region;
using remat::testing::planner_call;

namespace {

OffloadSearch search(const Data& d, const SearchSpace& space, FakePricer& pricer, int64_t budget, int64_t host,
                     const std::vector<bool>& keep) {
  // A link so fast that next to no transfer is exposed (transfer_cost): every candidate is cheaper
  // to move than to recompute; the fake pricer charges its own transfer price.
  return OffloadSearch{d, space, pricer, budget, host, 1e30, 1000, KeepSet{keep, {}}, pricer.price(keep)};
}

bool offloads(const KeepSet& s, size_t c) { return !s.offload.empty() && s.offload[c]; }

}  // namespace

TEST_CASE("search_offload: an output recomputed for lack of room is offloaded instead, where the host has room",
          "[planner][offload]") {
  // A and B: 4 bytes, cost 8; C: 4 bytes, cost 1. A device budget of 6 keeps one of A and B
  // (cost 9). Offloading the other fits (4 + 2 bytes) and costs 1 + 1 s of transfer.
  Data d = one_region({planner_call(4, 8), planner_call(4, 8), planner_call(4, 1)});
  SearchSpace space = order_by_value(&d);
  REQUIRE(space.candidates == std::vector<size_t>{0, 1, 2});
  FakePricer pricer(d);
  OffloadSearch s = search(d, space, pricer, 6, 8, {true, false, false});
  REQUIRE(s.best_run.cost() == 9);
  search_offload(s, [](const char*) {});
  CHECK(s.best_run.cost() == 2);
  CHECK(s.best_run.peak <= 6);
  CHECK(s.best_run.host_peak <= 8);
  CHECK(s.best.keep[0] + offloads(s.best, 0) + s.best.keep[1] + offloads(s.best, 1) == 2);  // A and B not recomputed
  CHECK(!s.best.keep[2]);
  CHECK(!offloads(s.best, 2));
}

TEST_CASE("search_offload: the host budget bounds what is offloaded; within it the choice is the cheapest",
          "[planner][offload]") {
  Data d = one_region({planner_call(4, 8), planner_call(4, 8), planner_call(4, 1)});
  SearchSpace space = order_by_value(&d);
  FakePricer pricer(d);
  // 3 bytes of host memory hold no output: nothing changes.
  OffloadSearch none = search(d, space, pricer, 6, 3, {true, false, false});
  search_offload(none, [](const char*) {});
  CHECK(none.best.offload.empty());
  CHECK(none.best_run.cost() == 9);
  // A device budget of 4: keep-only keeps one (cost 9); offloading both A and B takes 4 bytes of
  // the device and 8 of the host, costs 1 + 2 s.
  OffloadSearch both = search(d, space, pricer, 4, 8, {true, false, false});
  offload_prefix(both);  // B offloaded beside A kept needs 6 bytes: nothing fits
  CHECK(both.best.offload.empty());
  offload_kept(both);
  CHECK(offloads(both.best, 0));
  CHECK(offloads(both.best, 1));
  CHECK(both.best_run.cost() == 3);
  // The phases' names, in order.
  std::vector<std::string> phases;
  OffloadSearch named = search(d, space, pricer, 6, 8, {true, false, false});
  search_offload(named, [&](const char* p) { phases.push_back(p); });
  CHECK(phases == std::vector<std::string>{"offload: the recomputed outputs worth moving, the longest prefix that fits",
                                           "offload: the kept outputs cheaper to move than to recompute, then more kept",
                                           "offload: first fit, one step up"});
}

TEST_CASE("offload_prefix: the longest prefix of the recomputed candidates, by value, that fits", "[planner][offload]") {
  // By value: 0 (2 bytes, cost 8), 1 (4 bytes, cost 8), 2 (8 bytes, cost 8). Nothing kept; a device
  // budget of 3 holds the halves of 0 and 1 (1 + 2 bytes), not 2's 4 more.
  Data d = one_region({planner_call(2, 8), planner_call(4, 8), planner_call(8, 8)});
  SearchSpace space = order_by_value(&d);
  REQUIRE(space.candidates == std::vector<size_t>{0, 1, 2});
  FakePricer pricer(d);
  OffloadSearch s = search(d, space, pricer, 3, 100, {false, false, false});
  offload_prefix(s);
  CHECK(offloads(s.best, 0));
  CHECK(offloads(s.best, 1));
  CHECK(!offloads(s.best, 2));
  CHECK(s.best_run.peak == 3);
  CHECK(s.best_run.cost() == 8 + 0.25 * 6);
  // No dry run left: nothing priced, nothing changed.
  OffloadSearch spent = search(d, space, pricer, 3, 100, {false, false, false});
  spent.stop = pricer.dry_runs();
  offload_prefix(spent);
  CHECK(spent.best.offload.empty());
}

TEST_CASE("offload_prefix: only outputs whose recompute costs more than their exposed transfer are offloaded",
          "[planner][offload]") {
  // One region: c0 (4 bytes, 1 s), then c1 (4 bytes, 20 s). At 1 byte/s, c0's copy to host hides
  // behind c1 but nothing hides its copy back (no later region): 4 s exposed, dearer than its 1 s of
  // recompute. c1's copy starts when the forward ends: 4 + 4 s exposed, cheaper than its 20 s.
  Data d = one_region({planner_call(4, 1, "c0"), planner_call(4, 20, "c1")});
  SearchSpace space = order_by_value(&d);
  FakePricer pricer(d);
  OffloadSearch s{d, space, pricer, 100, 100, /*bandwidth=*/1.0, 1000, KeepSet{{false, false}, {}},
                  pricer.price(std::vector<bool>{false, false})};
  CHECK(exposed_alone(s, 0) == 4.0);
  CHECK(exposed_alone(s, 1) == 8.0);
  offload_prefix(s);
  CHECK(!offloads(s.best, 0));
  CHECK(offloads(s.best, 1));
}

TEST_CASE("offload_kept from a larger plan that does not fit: the fewest outputs recomputed, lowest value first",
          "[planner][offload]") {
  // From keeping A, B and C (12 bytes): all three offloaded take 6 bytes, over a budget of 4;
  // recomputing C, the lowest value, fits (A and B offloaded: 4 bytes, cost 1 + 2 s).
  Data d = one_region({planner_call(4, 8), planner_call(4, 8), planner_call(4, 1)});
  SearchSpace space = order_by_value(&d);
  FakePricer pricer(d);
  OffloadSearch s = search(d, space, pricer, 4, 100, {true, false, false});
  REQUIRE(s.best_run.cost() == 9);
  offload_kept(s, KeepSet{{true, true, true}, {}});
  CHECK(offloads(s.best, 0));
  CHECK(offloads(s.best, 1));
  CHECK(!offloads(s.best, 2));
  CHECK(!s.best.keep[2]);
  CHECK(s.best_run.peak == 4);
  CHECK(s.best_run.cost() == 3);
}
