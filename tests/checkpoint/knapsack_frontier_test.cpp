// Tests checkpoint/knapsack_frontier.{h,cpp}: the Pareto front of (bytes kept, recompute cost) on
// small hand-made regions whose fronts are worked out by hand in the comments, exactly.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "checkpoint/knapsack_frontier.h"

using remat::planner_detail::Data;
using remat::planner_detail::knapsack_frontier;

namespace {

using Sets = std::vector<std::vector<bool>>;

Data::Call call(const std::string& op, int64_t bytes, double cost, bool needed = true) {
  Data::Call c;
  c.key = op + " / #" + std::to_string(bytes);
  c.op = op;
  c.bytes = bytes;
  c.cost = cost;
  c.needed = needed;
  return c;
}

Data data_of(std::vector<Data::Call> calls, std::vector<std::vector<size_t>> regions) {
  Data d;
  d.calls = std::move(calls);
  for (auto& r : regions) d.regions.push_back(Data::Region{"r", std::move(r), 0, 0, 0});
  return d;
}

// The keep-set that keeps exactly `kept` of n calls.
std::vector<bool> keeps(size_t n, const std::vector<size_t>& kept) {
  std::vector<bool> s(n, false);
  for (size_t c : kept) s[c] = true;
  return s;
}

}  // namespace

TEST_CASE("knapsack_frontier: one region: a rerun recomputes up to the last needed output not kept",
          "[planner][knapsack]") {
  // A (4 bytes, cost 1) then B (2 bytes, cost 3), both needed by backward.
  //   {}     0 bytes, reruns A and B: cost 4
  //   {A}    4 bytes, reruns up to B, A replayed: cost 3   (dominated by {B})
  //   {B}    2 bytes, reruns up to A: cost 1
  //   {A,B}  6 bytes, no rerun: cost 0
  Data d = data_of({call("aten::mm", 4, 1), call("aten::gelu", 2, 3)}, {{0, 1}});
  CHECK(knapsack_frontier(d, {true, true}) == Sets{keeps(2, {}), keeps(2, {1}), keeps(2, {0, 1})});
  // Only A may be kept: {} and {A} (cost 3 < 4).
  CHECK(knapsack_frontier(d, {true, false}) == Sets{keeps(2, {}), keeps(2, {0})});
}

TEST_CASE("knapsack_frontier: keeping the last needed output spares the rerun, whatever comes before it",
          "[planner][knapsack]") {
  // S (8 bytes, cost 5, not needed: a replay candidate) then P (1 byte, cost 1, needed).
  //   {} cost 6; {S} 8 bytes, cost 1; {P} 1 byte, cost 0 (no needed output left to recompute);
  //   {S,P} 9 bytes, cost 0. The front: {}, {P}.
  Data d = data_of({call("aten::mm", 8, 5, /*needed=*/false), call("aten::_softmax", 1, 1)}, {{0, 1}});
  CHECK(knapsack_frontier(d, {true, true}) == Sets{keeps(2, {}), keeps(2, {1})});
}

TEST_CASE("knapsack_frontier: regions that repeat cost once per instance; the front combines regions",
          "[planner][knapsack]") {
  // Calls 0 (2 bytes, cost 1) and 1 (2 bytes, cost 2) in a region run twice; call 2 (3 bytes,
  // cost 4) in a region of its own. Bytes count once (one call's output, kept in both instances).
  //   The repeated region: {} cost (1+2)*2 = 6; {0} 2 bytes, cost 4; {1} 2 bytes, cost 2;
  //   {0,1} 4 bytes, cost 0. Its front: (0, 6), (2, 2) {1}, (4, 0) {0,1}.
  //   The other: (0, 4) {}, (3, 0) {2}.
  //   Combined: (0,10) {}; (2,6) {1}; (3,6) {2}: not cheaper than (2,6); (4,4) {0,1}; (5,2) {1,2};
  //   (7,0) {0,1,2}.
  Data d = data_of({call("aten::mm", 2, 1), call("aten::mm", 2, 2), call("aten::addmm", 3, 4)},
                   {{0, 1}, {2}, {0, 1}});
  CHECK(knapsack_frontier(d, {true, true, true}) ==
        Sets{keeps(3, {}), keeps(3, {1}), keeps(3, {0, 1}), keeps(3, {1, 2}), keeps(3, {0, 1, 2})});
}

TEST_CASE("knapsack_frontier: more than 16 keepable calls in a region are kept by op", "[planner][knapsack]") {
  // 17 needed calls of 1 byte and cost 1, "a" at even positions (9 of them), "b" at odd ones (8).
  //   {}: cost 17; all "a": 9 bytes, reruns up to the last "b" (position 15), recomputing the 8
  //   "b": cost 8; all "b": 8 bytes, reruns to position 16, recomputing the 9 "a": cost 9; both:
  //   17 bytes, cost 0. Every point is on the front: (0,17), (8,9) b, (9,8) a, (17,0).
  std::vector<Data::Call> calls;
  std::vector<size_t> region, a, b;
  for (size_t i = 0; i < 17; ++i) {
    calls.push_back(call(i % 2 == 0 ? "a" : "b", 1, 1));
    region.push_back(i);
    (i % 2 == 0 ? a : b).push_back(i);
  }
  Data d = data_of(calls, {region});
  CHECK(knapsack_frontier(d, std::vector<bool>(17, true)) ==
        Sets{keeps(17, {}), keeps(17, b), keeps(17, a), keeps(17, region)});
}

TEST_CASE("knapsack_frontier: regions that share only some of their calls are not enumerated",
          "[planner][knapsack]") {
  Data d = data_of({call("aten::mm", 1, 1), call("aten::mm", 1, 1), call("aten::mm", 1, 1)}, {{0, 1}, {1, 2}});
  CHECK(knapsack_frontier(d, {true, true, true}).empty());
}
