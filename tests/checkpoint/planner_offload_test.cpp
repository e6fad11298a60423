// Tests checkpoint/planner_offload.{h,cpp}: the offload phases on hand-made calls, priced by a
// fake pricer instead of dry runs: a kept output holds its bytes on the device, an offloaded one
// half of them (it leaves the device between its region's forward and its prefetch) and all of
// them in host memory; a recomputed one costs its recompute, an offloaded one a quarter second per
// byte of transfer.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "checkpoint/planner_offload.h"

using namespace remat::planner_detail;

namespace {

class FakePricer : public KeepSetPricer {
 public:
  explicit FakePricer(const Data& data) : data_(data) {}
  RunResult price(const std::vector<bool>& keep) override { return price(KeepSet{keep, {}}); }
  RunResult price(const KeepSet& set) override {
    ++runs_;
    RunResult r;
    for (size_t c = 0; c < set.keep.size(); ++c) {
      const bool off = !set.offload.empty() && set.offload[c];
      REQUIRE(!(off && set.keep[c]));
      if (set.keep[c]) r.peak += data_.calls[c].bytes;
      else if (off) r.peak += data_.calls[c].bytes / 2, r.host_peak += data_.calls[c].bytes,
                    r.transfer += 0.25 * static_cast<double>(data_.calls[c].bytes);
      else r.overhead += data_.calls[c].cost;
    }
    return r;
  }
  int64_t dry_runs() const override { return runs_; }
  void set_phase(const std::string&) override {}

 private:
  const Data& data_;
  int64_t runs_ = 0;
};

Data::Call call(int64_t bytes, double cost) {
  Data::Call c;
  c.key = "c" + std::to_string(bytes) + "/" + std::to_string(cost);
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

OffloadSearch search(const Data& d, const SearchSpace& space, FakePricer& pricer, int64_t budget, int64_t host,
                     const std::vector<bool>& keep) {
  return OffloadSearch{d, space, pricer, budget, host, 1000, KeepSet{keep, {}}, pricer.price(keep)};
}

bool offloads(const KeepSet& s, size_t c) { return !s.offload.empty() && s.offload[c]; }

}  // namespace

TEST_CASE("search_offload: an output recomputed for lack of room is offloaded instead, where the host has room",
          "[planner][offload]") {
  // A and B: 4 bytes, cost 8; C: 4 bytes, cost 1. A device budget of 6 keeps one of A and B
  // (cost 9). Offloading the other fits (4 + 2 bytes) and costs 1 + 1 s of transfer.
  Data d = data_of({call(4, 8), call(4, 8), call(4, 1)});
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
  Data d = data_of({call(4, 8), call(4, 8), call(4, 1)});
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
  offload_kept_then_first_fit(both);
  CHECK(offloads(both.best, 0));
  CHECK(offloads(both.best, 1));
  CHECK(both.best_run.cost() == 3);
  // The phases' names, in order.
  std::vector<std::string> phases;
  OffloadSearch named = search(d, space, pricer, 6, 8, {true, false, false});
  search_offload(named, [&](const char* p) { phases.push_back(p); });
  CHECK(phases == std::vector<std::string>{"offload: the longest prefix of the recomputed candidates that fits",
                                           "offload: first fit, one step up",
                                           "offload: every kept candidate offloaded, then first fit"});
}

TEST_CASE("offload_prefix: the longest prefix of the recomputed candidates, by value, that fits", "[planner][offload]") {
  // By value: 0 (2 bytes, cost 8), 1 (4 bytes, cost 8), 2 (8 bytes, cost 8). Nothing kept; a device
  // budget of 3 holds the halves of 0 and 1 (1 + 2 bytes), not 2's 4 more.
  Data d = data_of({call(2, 8), call(4, 8), call(8, 8)});
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
