// Hand-made planner profiles for the tests of checkpoint/planner_search, planner_offload and
// offload_cost: calls of aten::mm that backward needs, with their bytes and recompute cost, in one
// region; and a fake pricer that prices keep-sets from them instead of dry runs. Header-only,
// test-only.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/plan_data.h"
#include "checkpoint/planner_dry_runs.h"

namespace remat::testing {

// A call backward needs: `bytes` of output, `cost` seconds to recompute; key "c<bytes>" unless given.
inline planner_detail::Data::Call planner_call(int64_t bytes, double cost, std::string key = "") {
  planner_detail::Data::Call c;
  c.key = key.empty() ? "c" + std::to_string(bytes) : std::move(key);
  c.op = "aten::mm";
  c.bytes = bytes;
  c.cost = cost;
  c.needed = true;
  return c;
}

// The calls, in order, in one region.
inline planner_detail::Data one_region(std::vector<planner_detail::Data::Call> calls) {
  planner_detail::Data d;
  d.calls = std::move(calls);
  planner_detail::Data::Region r;
  for (size_t c = 0; c < d.calls.size(); ++c) r.calls.push_back(c);
  d.regions.push_back(r);
  return d;
}

// A keep-set priced without a dry run: a kept output holds its bytes on the device, an offloaded
// one half of them (it leaves the device between its region's forward and its prefetch) and all
// of them in host memory; a recomputed one costs its recompute, an offloaded one a quarter second
// per byte of transfer.
class FakePricer : public planner_detail::KeepSetPricer {
 public:
  explicit FakePricer(const planner_detail::Data& data) : data_(data) {}
  planner_detail::RunResult price(const std::vector<bool>& keep) override {
    return price(planner_detail::KeepSet{keep, {}});
  }
  planner_detail::RunResult price(const planner_detail::KeepSet& set) override {
    ++runs_;
    planner_detail::RunResult r;
    for (size_t c = 0; c < set.keep.size(); ++c) {
      const bool off = !set.offload.empty() && set.offload[c];
      const int64_t bytes = data_.calls[c].bytes;
      if (off && set.keep[c]) throw std::logic_error("FakePricer: call " + std::to_string(c) + " kept and offloaded");
      if (set.keep[c]) {
        r.peak += bytes;
      } else if (off) {
        r.peak += bytes / 2;
        r.host_peak += bytes;
        r.transfer += 0.25 * static_cast<double>(bytes);
      } else {
        r.overhead += data_.calls[c].cost;
      }
    }
    return r;
  }
  int64_t dry_runs() const override { return runs_; }
  void set_phase(const std::string&) override {}

 private:
  const planner_detail::Data& data_;
  int64_t runs_ = 0;
};

}  // namespace remat::testing
