// Tests checkpoint/knapsack_frontier.{h,cpp}: the Pareto front of (bytes kept, recompute cost) on
// small hand-made regions whose fronts are worked out by hand in the comments, exactly.
#include <catch2/catch.hpp>

#include <algorithm>
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

TEST_CASE("knapsack_frontier: more than 18 keepable calls in a region are kept by op", "[planner][knapsack]") {
  // 19 needed calls of 1 byte and cost 1, "a" at even positions (10 of them), "b" at odd ones (9),
  // none a copy. {}: cost 19; all "a": 10 bytes, reruns up to the last "b" (position 17),
  // recomputing the 9 "b": cost 9; all "b": 9 bytes, reruns to position 18, recomputing the 10
  // "a": cost 10; both: 19 bytes, cost 0. Every point is on the front: (0,19), (9,10) b, (10,9) a,
  // (19,0).
  std::vector<Data::Call> calls;
  std::vector<size_t> region, a, b;
  for (size_t i = 0; i < 19; ++i) {
    calls.push_back(call(i % 2 == 0 ? "a" : "b", 1, 1));
    region.push_back(i);
    (i % 2 == 0 ? a : b).push_back(i);
  }
  Data d = data_of(calls, {region});
  CHECK(knapsack_frontier(d, std::vector<bool>(19, true)) ==
        Sets{keeps(19, {}), keeps(19, b), keeps(19, a), keeps(19, region)});
}

TEST_CASE("knapsack_frontier: past 18 keepable calls, the copies of one output are one item and the rest stay "
          "one by one, so a projection is kept without the other matmuls",
          "[planner][knapsack]") {
  // A GPT block in small: P, the qkv projection (aten::addmm, 8 bytes, cost 10; backward does not
  // need it), its copies Q, K, V (aten::clone of P's output, as matmul makes for bmm: 1 byte, cost
  // 1, needed), 14 needed calls of 1 byte and cost 1, then F, the MLP's matmul (aten::addmm, 100
  // bytes, cost 50, needed). 19 keepable calls: items P, {Q,K,V}, the 14 and F, 17 of them. Unless F
  // is kept a rerun reaches it, so a keep-set of at most 8 bytes without P costs 77 less its bytes,
  // at least 69; keeping P alone costs 67 (Q, K, V, the 14 and F): on the front. By op the two
  // addmm would be one item of 108 bytes, and the cheapest keep-set of at most 8 bytes would cost 69.
  std::vector<Data::Call> calls = {call("aten::addmm", 8, 10, /*needed=*/false)};
  for (int k = 0; k < 3; ++k) {
    calls.push_back(call("aten::clone", 1, 1));
    calls.back().copy_of = 0;
  }
  for (int k = 0; k < 14; ++k) calls.push_back(call("aten::gelu", 1, 1));
  calls.push_back(call("aten::addmm", 100, 50));
  std::vector<size_t> region;
  for (size_t c = 0; c < calls.size(); ++c) region.push_back(c);
  Data d = data_of(calls, {region});
  const Sets front = knapsack_frontier(d, std::vector<bool>(19, true));
  CHECK(std::find(front.begin(), front.end(), keeps(19, {0})) != front.end());
  for (const std::vector<bool>& s : front) {  // Q, K and V kept together or not at all
    CHECK(s[1] == s[2]);
    CHECK(s[2] == s[3]);
  }
  std::vector<size_t> needed(region.begin() + 1, region.end());
  CHECK(front.back() == keeps(19, needed));  // nothing rerun: P not kept
}

TEST_CASE("knapsack_frontier: regions alike but for their calls share a menu, each keeping its own calls",
          "[planner][knapsack]") {
  // Two regions, calls 0, 1 and 2, 3, the same figures: A (2 bytes, cost 1), B (1 byte, cost 3).
  // Each region's menu: (0,4) {}, (1,1) {B}, (3,0) {A,B} ({A} at (2,3) is dominated). Combined:
  // (0,8), (1,5) one B, (2,2) both B, (4,1) one region whole and the other's B, (6,0) all.
  Data d = data_of({call("aten::mm", 2, 1), call("aten::gelu", 1, 3), call("aten::mm", 2, 1), call("aten::gelu", 1, 3)},
                   {{0, 1}, {2, 3}});
  const Sets front = knapsack_frontier(d, std::vector<bool>(4, true));
  REQUIRE(front.size() == 5);
  CHECK(front[0] == keeps(4, {}));
  CHECK(front[2] == keeps(4, {1, 3}));
  CHECK(front[4] == keeps(4, {0, 1, 2, 3}));
}

TEST_CASE("knapsack_frontier: regions that share only some of their calls are not enumerated",
          "[planner][knapsack]") {
  Data d = data_of({call("aten::mm", 1, 1), call("aten::mm", 1, 1), call("aten::mm", 1, 1)}, {{0, 1}, {1, 2}});
  CHECK(knapsack_frontier(d, {true, true, true}).empty());
}
