// Tests checkpoint/planner_search.{h,cpp}: the search's phases on hand-made calls, priced by a fake
// pricer instead of dry runs (tests/testing/planner_data.h: a keep-set's peak is the bytes it keeps,
// its cost what it does not keep).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "checkpoint/planner_search.h"
#include "tests/testing/planner_data.h"

using namespace remat::planner_detail;
using remat::testing::FakePricer;
using remat::testing::one_region;
using remat::testing::planner_call;

namespace {

Search search(const Data& d, const SearchSpace& space, FakePricer& pricer, int64_t budget,
              const std::vector<bool>& start) {
  return Search{d, space, pricer, budget, 1000, start, pricer.price(start)};
}

}  // namespace

TEST_CASE("order_by_value: candidates by recompute cost saved per byte kept, ties in forward order",
          "[planner][search]") {
  // Values 1, 3, 1, 3.
  Data d = one_region({planner_call(10, 10), planner_call(1, 3), planner_call(2, 2), planner_call(4, 12)});
  SearchSpace space = order_by_value(&d);
  CHECK(space.candidates == std::vector<size_t>{1, 3, 0, 2});
  CHECK(d.candidates == space.candidates);
  CHECK(space.all == std::vector<bool>{true, true, true, true});
}

TEST_CASE("search_swaps: a kept call out for one whose own recompute cost is higher, even of lower value",
          "[planner][search]") {
  // A: 10 bytes, cost 10 (value 1); B: 1 byte, cost 3 (value 3). A budget of 10 bytes holds one
  // of them: keeping B costs 10, keeping A costs 3. The swap compares the calls' recompute costs
  // (what a swap must win), not their value per byte (by which B, kept, is the better one).
  Data d = one_region({planner_call(10, 10), planner_call(1, 3)});
  SearchSpace space = order_by_value(&d);
  REQUIRE(space.candidates == std::vector<size_t>{1, 0});
  FakePricer pricer(d);
  Search s = search(d, space, pricer, 10, {false, true});
  search_swaps(s);
  CHECK(s.best == std::vector<bool>{true, false});
  CHECK(s.best_run.overhead == 3);
  // No swap when the call out costs as much as the call in.
  Data same = one_region({planner_call(10, 3), planner_call(1, 3)});
  SearchSpace same_space = order_by_value(&same);
  FakePricer same_pricer(same);
  Search t = search(same, same_space, same_pricer, 10, {false, true});
  const int64_t before = same_pricer.dry_runs();
  search_swaps(t);
  CHECK(t.best == std::vector<bool>{false, true});
  CHECK(same_pricer.dry_runs() == before);
}

TEST_CASE("search_prefix and search_first_fit: the longest prefix that fits, then what else fits alone",
          "[planner][search]") {
  // By value: 1 (2 bytes, cost 8), 0 (4 bytes, cost 8), 2 (8 bytes, cost 8), 3 (1 byte, cost 1).
  Data d = one_region({planner_call(4, 8), planner_call(2, 8), planner_call(8, 8), planner_call(1, 1)});
  SearchSpace space = order_by_value(&d);
  REQUIRE(space.candidates == std::vector<size_t>{1, 0, 2, 3});
  FakePricer pricer(d);
  Search s = search(d, space, pricer, 7, {false, false, false, false});
  search_prefix(s);  // prefixes of 2 bytes, 6, 14: the longest that fits keeps 1 and 0
  CHECK(s.best == std::vector<bool>{true, true, false, false});
  search_first_fit(s);  // 2 does not fit beside them, 3 does
  CHECK(s.best == std::vector<bool>{true, true, false, true});
  CHECK(s.best_run.peak == 7);
}
