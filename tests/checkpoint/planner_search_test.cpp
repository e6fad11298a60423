// Tests checkpoint/planner_search.{h,cpp}: the search's phases on hand-made calls, priced by a fake
// pricer instead of dry runs (a keep-set's peak: the bytes it keeps; its cost: what it does not keep).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "checkpoint/planner_search.h"

using namespace remat::planner_detail;

namespace {

class FakePricer : public KeepSetPricer {
 public:
  explicit FakePricer(const Data& data) : data_(data) {}
  RunResult price(const std::vector<bool>& keep) override {
    ++runs_;
    RunResult r;
    for (size_t c = 0; c < keep.size(); ++c) {
      if (keep[c]) r.peak += data_.calls[c].bytes;
      else r.overhead += data_.calls[c].cost;
    }
    return r;
  }
  // The keep/recompute phases price keep-sets only (the offload phases: planner_offload_test.cpp).
  RunResult price(const KeepSet& set) override {
    REQUIRE(set.offload.empty());
    return price(set.keep);
  }
  int64_t dry_runs() const override { return runs_; }
  void set_phase(const std::string&) override {}

 private:
  const Data& data_;
  int64_t runs_ = 0;
};

Data::Call call(int64_t bytes, double cost) {
  Data::Call c;
  c.key = "c" + std::to_string(bytes);
  c.op = "aten::mm";
  c.bytes = bytes;
  c.cost = cost;
  c.needed = true;
  return c;
}

Data data_of(std::vector<Data::Call> calls) {
  Data d;
  d.calls = std::move(calls);
  Data::Region r;
  for (size_t c = 0; c < d.calls.size(); ++c) r.calls.push_back(c);
  d.regions.push_back(r);
  return d;
}

Search search(const Data& d, const SearchSpace& space, FakePricer& pricer, int64_t budget,
              const std::vector<bool>& start) {
  return Search{d, space, pricer, budget, 1000, start, pricer.price(start)};
}

}  // namespace

TEST_CASE("order_by_value: candidates by recompute cost saved per byte kept, ties in forward order",
          "[planner][search]") {
  Data d = data_of({call(10, 10), call(1, 3), call(2, 2), call(4, 12)});  // values 1, 3, 1, 3
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
  Data d = data_of({call(10, 10), call(1, 3)});
  SearchSpace space = order_by_value(&d);
  REQUIRE(space.candidates == std::vector<size_t>{1, 0});
  FakePricer pricer(d);
  Search s = search(d, space, pricer, 10, {false, true});
  search_swaps(s);
  CHECK(s.best == std::vector<bool>{true, false});
  CHECK(s.best_run.overhead == 3);
  // No swap when the call out costs as much as the call in.
  Data same = data_of({call(10, 3), call(1, 3)});
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
  Data d = data_of({call(4, 8), call(2, 8), call(8, 8), call(1, 1)});
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
