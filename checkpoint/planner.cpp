// The checkpointing planner (see planner.h).
#include "checkpoint/planner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <limits>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "checkpoint/checkpoint.h"
#include "checkpoint/stats.h"
#include "checkpoint/runtime_estimator.h"
#include "checkpoint/thread_state.h"
#include "engine/core/allocator.h"
#include "engine/core/dry_run.h"

namespace remat {

namespace {

std::string call_key(const std::string& scope, const std::string& op, int64_t index) {
  return (scope.empty() ? std::string("<top>") : scope) + " / " + op + " / #" + std::to_string(index);
}

uint64_t storage_id(const Tensor& t) { return t.defined() ? t.impl()->storage()->id() : 0; }

std::vector<Shape> arg_shapes(const std::vector<IValue>& args) {
  std::vector<Shape> shapes;
  for (const IValue& a : args)
    if (a.isTensor()) shapes.push_back(a.toTensor().defined() ? a.toTensor().sizes() : Shape{-1});
  return shapes;
}

}  // namespace

struct CheckpointPlan::Data {
  struct Call {
    std::string key;
    std::string op;                 // "aten::mm"
    std::vector<Shape> arg_shapes;  // what the plan was made for
    int64_t bytes = 0;              // new output bytes of one call
    double cost = 0;                // recompute cost of one call
    bool needed = false;            // backward saves (a view of) its output
    bool mutated = false;           // an in-place op changes its output later: SAC cannot keep it
    bool kept = false;
  };
  struct Region {
    std::string scope;
    std::vector<size_t> calls;  // in forward order
    double overhead = 0, flops = 0;
    int64_t recomputed = 0;
  };
  std::vector<Call> calls;
  std::unordered_map<std::string, size_t> by_key;
  std::vector<Region> regions;
  std::vector<size_t> candidates;         // outputs backward needs, in the search's order
  std::vector<size_t> replay_candidates;  // outputs only a rerun would recompute, likewise
  PlannerOptions options;
  // The profiling run's calls in order: every later dry run must make the same ones.
  struct Seen {
    size_t region;  // ordinal of its region in the run
    size_t call;    // index into calls
    std::vector<Shape> arg_shapes;
  };
  std::vector<Seen> sequence;
};

namespace {

using Data = CheckpointPlan::Data;

// The budgets the search runs at: kRungs + 1 of them, evenly from the lowest feasible peak up to
// keep-all's (the last just below it).
constexpr int kRungs = 4;

// Listens to one dry run: records the calls (when profiling) and prices what is recomputed.
class DryRunObserver : public stats_detail::PlanningObserver {
 public:
  DryRunObserver(Data* data, bool profile, RuntimeEstimator* estimator)
      : data_(data), profile_(profile), estimator_(estimator) {}

  void forward_call(int64_t region, const std::string& scope, const OperatorHandle& op, int64_t index,
                    const std::vector<IValue>& args, const std::vector<IValue>& outputs, bool) override {
    const size_t n = calls_seen_++;
    if (!profile_) {
      if (!mismatch_.empty() || !same_as_profile(n, region, scope, op, index, args)) return;
      region_of(region, scope);
      return;
    }
    Data::Region& r = region_of(region, scope);
    std::string key = call_key(scope, op.name(), index);
    auto [it, fresh] = data_->by_key.emplace(key, data_->calls.size());
    if (fresh) {
      Data::Call c;
      c.key = std::move(key);
      c.op = op.name();
      c.arg_shapes = arg_shapes(args);
      c.cost = estimator_->estimate(op, args, outputs);
      data_->calls.push_back(std::move(c));
    }
    Data::Call& c = data_->calls[it->second];
    c.bytes = std::max(c.bytes, new_output_bytes(args, outputs));  // one call's (regions sharing a key repeat it)
    r.calls.push_back(it->second);
    data_->sequence.push_back(Data::Seen{region_index_.at(region), it->second, arg_shapes(args)});
    if (op.schema().is_mutable()) {
      for (const IValue& a : args) {
        if (!a.isTensor()) continue;
        auto p = producer_.find(storage_id(a.toTensor()));
        if (p != producer_.end()) data_->calls[p->second].mutated = true;
      }
    }
    for (const IValue& v : outputs)
      if (v.isTensor() && v.toTensor().defined() && !shares_storage_with(v.toTensor(), args))
        producer_[storage_id(v.toTensor())] = it->second;
  }

  void saved(int64_t, const Tensor& t) override {
    if (!profile_) return;
    auto p = producer_.find(storage_id(t));
    if (p != producer_.end()) data_->calls[p->second].needed = true;
  }

  void recomputed(int64_t region, const OperatorHandle& op, const std::vector<IValue>& args,
                  const std::vector<IValue>& outputs) override {
    double c = estimator_->estimate(op, args, outputs);
    overhead += c;
    auto it = region_index_.find(region);
    if (it != region_index_.end()) {
      Data::Region& r = data_->regions[it->second];
      if (!profile_ && record_regions_) {
        r.overhead += c;
        r.flops += stats_detail::op_flops(op, args, outputs);
        r.recomputed += 1;
      }
    }
  }

  // The price of what was recomputed since checkpoint_stats() was last reset (a step that resets
  // it per training step, as the benchmark's does, is priced per step like its recompute_flops).
  void stats_reset() override { overhead = 0; }

  // After the run: "" if it made the profiling run's calls, else the first difference.
  std::string mismatch() {
    if (mismatch_.empty() && !profile_ && calls_seen_ < data_->sequence.size()) {
      const Data::Seen& want = data_->sequence[calls_seen_];
      mismatch_ = "it made " + std::to_string(calls_seen_) + " op calls in checkpointed regions, the profiling run " +
                  std::to_string(data_->sequence.size()) + ": the first missing one is call " +
                  std::to_string(calls_seen_ + 1) + ", " + describe(data_->calls[want.call].key, want.region,
                                                                    want.arg_shapes);
    }
    return mismatch_;
  }

  double overhead = 0;
  bool record_regions_ = false;

 private:
  static std::string describe(const std::string& key, size_t region, const std::vector<Shape>& shapes) {
    std::ostringstream os;
    os << "'" << key << "' in region " << region + 1 << " with arguments of shapes";
    for (const Shape& sh : shapes) os << " " << sh;
    if (shapes.empty()) os << " (none)";
    return os.str();
  }

  // Whether the n-th call of a later dry run is the profiling run's n-th call (its region, op,
  // scope, index and argument shapes); records the first difference.
  bool same_as_profile(size_t n, int64_t region, const std::string& scope, const OperatorHandle& op, int64_t index,
                       const std::vector<IValue>& args) {
    auto known = region_index_.find(region);
    const size_t ordinal = known != region_index_.end() ? known->second : region_index_.size();
    const std::string key = call_key(scope, op.name(), index);
    const std::vector<Shape> shapes = arg_shapes(args);
    const std::string here = "call " + std::to_string(n + 1) + " is " + describe(key, ordinal, shapes);
    if (n >= data_->sequence.size()) {
      mismatch_ = here + ", where the profiling run made only " + std::to_string(data_->sequence.size()) +
                  " op calls in checkpointed regions";
      return false;
    }
    const Data::Seen& want = data_->sequence[n];
    if (want.region != ordinal || data_->calls[want.call].key != key || want.arg_shapes != shapes) {
      mismatch_ = here + ", where the profiling run's was " +
                  describe(data_->calls[want.call].key, want.region, want.arg_shapes);
      return false;
    }
    return true;
  }

  // Regions are numbered afresh in every dry run: the n-th region seen is region n.
  // A region's scope is what its calls' scopes share ("layers.3" for calls under layers.3.*).
  Data::Region& region_of(int64_t region, const std::string& scope) {
    auto [it, fresh] = region_index_.emplace(region, region_index_.size());
    if (fresh && profile_) data_->regions.push_back(Data::Region{scope, {}, 0, 0, 0});
    Data::Region& r = data_->regions.at(it->second);
    if (profile_ && !fresh) {
      size_t k = 0;
      while (k < r.scope.size() && k < scope.size() && r.scope[k] == scope[k]) ++k;
      if (k < r.scope.size()) {
        while (k > 0 && !(k == scope.size() || scope[k] == '.')) --k;  // back to a whole name
        r.scope.resize(k);
      }
    }
    return r;
  }

  Data* data_;
  bool profile_;
  RuntimeEstimator* estimator_;
  std::unordered_map<uint64_t, size_t> producer_;  // storage id -> the call that made it
  std::unordered_map<int64_t, size_t> region_index_;
  size_t calls_seen_ = 0;
  std::string mismatch_;
};

// The keep-sets along the Pareto front of (bytes kept, recompute cost), cheapest last: each
// region's menu of keep-sets priced analytically from the profile, combined over the regions by a
// multiple-choice knapsack. A region rerun recomputes the calls up to its last needed output that
// is not kept, less the kept ones (replayed), so its cost under a keep-set is known without a dry
// run; regions that repeat (a second training step in `step`) cost once per instance. Bytes kept
// only approximate the peak, which the caller checks by dry runs along the front. Empty when a
// region is too irregular to enumerate (then the other moves still search).
std::vector<std::vector<bool>> knapsack_frontier(const Data& data, const std::vector<bool>& keepable) {
  struct Choice {  // one region's keep-set: the items in `mask` (its calls listed only for the front)
    int64_t bytes = 0;
    double cost = 0;
    uint32_t mask = 0;
  };
  struct Point {  // a front point: its region's choice and the previous front's point it extends
    int64_t bytes = 0;
    double cost = 0;
    size_t choice = 0, previous = 0;
  };
  auto pareto = [](auto v) {  // bytes rising, cost strictly falling
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
      return a.bytes != b.bytes ? a.bytes < b.bytes : a.cost < b.cost;
    });
    decltype(v) front;
    for (auto& o : v)
      if (front.empty() || o.cost < front.back().cost) front.push_back(std::move(o));
    return front;
  };
  std::map<std::vector<size_t>, int> instances;  // a region's calls (forward order) -> how many regions run them
  for (const Data::Region& r : data.regions) ++instances[r.calls];
  std::vector<int> group_of(data.calls.size(), -1);
  int group = 0;
  for (const auto& [calls, count] : instances) {
    for (size_t c : calls) {
      if (group_of[c] >= 0 && group_of[c] != group) return {};  // regions that share only some calls
      group_of[c] = group;
    }
    ++group;
  }
  constexpr size_t kMaxItems = 16;
  std::vector<std::vector<Choice>> menus;   // per region group
  std::vector<std::vector<std::vector<size_t>>> group_items;  // per region group: its items' calls
  std::vector<std::vector<Point>> fronts = {{Point{}}};  // fronts[g]: over the first g groups
  for (const auto& [calls, count] : instances) {
    // Items: the region's keepable calls one by one, or (too many of them) all calls of one op.
    std::vector<std::vector<size_t>> items;
    std::vector<size_t> own;
    for (size_t c : calls)
      if (keepable[c] && std::find(own.begin(), own.end(), c) == own.end()) own.push_back(c);
    if (own.size() <= kMaxItems) {
      for (size_t c : own) items.push_back({c});
    } else {
      std::map<std::string, std::vector<size_t>> by_op;
      for (size_t c : own) by_op[data.calls[c].op].push_back(c);
      if (by_op.size() > kMaxItems) return {};
      for (auto& [op, cs] : by_op) items.push_back(cs);
    }
    std::vector<Choice> menu;
    std::vector<bool> kept(data.calls.size(), false);
    for (uint32_t mask = 0; mask < (1u << items.size()); ++mask) {
      Choice o;
      for (size_t k = 0; k < items.size(); ++k)
        for (size_t c : items[k]) kept[c] = (mask >> k) & 1u;
      size_t last = calls.size();
      for (size_t p = 0; p < calls.size(); ++p) {
        const Data::Call& call = data.calls[calls[p]];
        if (call.needed && call.bytes > 0 && !kept[calls[p]]) last = p;
      }
      for (size_t p = 0; last < calls.size() && p <= last; ++p)
        if (!kept[calls[p]]) o.cost += data.calls[calls[p]].cost * count;
      for (size_t k = 0; k < items.size(); ++k)
        if ((mask >> k) & 1u)
          for (size_t c : items[k]) o.bytes += data.calls[c].bytes;
      o.mask = mask;
      menu.push_back(o);
    }
    menus.push_back(pareto(std::move(menu)));
    group_items.push_back(std::move(items));
    const std::vector<Point>& front = fronts.back();
    std::vector<Point> merged;
    merged.reserve(front.size() * menus.back().size());
    for (size_t i = 0; i < front.size(); ++i)
      for (size_t j = 0; j < menus.back().size(); ++j)
        merged.push_back({front[i].bytes + menus.back()[j].bytes, front[i].cost + menus.back()[j].cost, j, i});
    std::vector<Point> next = pareto(std::move(merged));
    constexpr size_t kMaxFront = 2048;  // thin evenly, both ends kept
    if (next.size() > kMaxFront) {
      std::vector<Point> thin;
      for (size_t i = 0; i < kMaxFront; ++i) thin.push_back(next[i * (next.size() - 1) / (kMaxFront - 1)]);
      next = std::move(thin);
    }
    fronts.push_back(std::move(next));
  }
  std::vector<std::vector<bool>> sets;
  for (size_t i = 0; i < fronts.back().size(); ++i) {
    std::vector<bool> s(data.calls.size(), false);
    for (size_t g = menus.size(), at = i; g > 0; --g) {  // back through the fronts
      const Point& p = fronts[g][at];
      const std::vector<std::vector<size_t>>& items = group_items[g - 1];
      for (size_t k = 0; k < items.size(); ++k)
        if ((menus[g - 1][p.choice].mask >> k) & 1u)
          for (size_t c : items[k]) s[c] = true;
      at = p.previous;
    }
    sets.push_back(std::move(s));
  }
  return sets;
}

struct RunResult {
  int64_t peak = 0;  // of the plan's counter
  int64_t allocated_peak = 0, reserved_peak = 0;
  double flops = 0, overhead = 0;
};

// Re-raises the exception being handled with `where` before its message: remat's errors as their
// own type, any other std::exception as a remat::Error with the original nested in it
// (std::rethrow_if_nested), anything else as it is.
[[noreturn]] void rethrow_with_context(const std::string& where) {
  try {
    throw;
  } catch (const CheckpointError& e) {
    throw CheckpointError(where + e.what());
  } catch (const Error& e) {
    throw Error(where + e.what());
  } catch (const std::exception& e) {
    std::throw_with_nested(Error(where + e.what()));
  }
}

class Planner {
 public:
  Planner(const PlannedStep& step, const PlannerOptions& o)
      : step_(step),
        estimator_(o.estimator ? o.estimator
                               : std::make_shared<RuntimeEstimator>(o.estimate_mode, o.device, o.peak_flops, o.bandwidth)),
        imitated_(o.device.is_cuda() ? kCUDA : kCPU),
        counter_(o.counter.value_or(o.device.is_cuda() ? MemoryCounter::Reserved : MemoryCounter::Allocated)) {
    REMAT_CHECK(estimator_->device() == o.device, "plan_checkpointing: options.estimator prices calls on ",
                toString(estimator_->device().type), ", but options.device is ", toString(o.device.type));
    data.options = o;
    data.options.estimator = estimator_;  // with_kept prices with the same measurements
  }
  EstimateMode estimate_mode() const { return estimator_->mode(); }
  MemoryCounter counter() const { return counter_; }

  // One dry run with `keep` kept (profile: also records the calls), in a DryRun of its own: its
  // Meta counters, checkpoint_stats() and storage observers are its own, whatever other threads
  // run. A keep-set priced before is not run again. The step must make the profiling run's calls
  // (else CheckpointError); if it throws, the thread's state is restored and its error re-raised
  // with the dry run's number and phase.
  RunResult run(const std::vector<bool>& keep, bool profile = false, bool record_regions = false) {
    const bool memoized = !profile && !record_regions;
    if (memoized) {
      auto it = memo_.find(keep);
      if (it != memo_.end()) return evaluated[it->second].second;
    }
    const int64_t number = ++dry_runs;
    auto kept_keys = std::make_shared<std::unordered_set<std::string>>();
    for (size_t i = 0; i < keep.size(); ++i)
      if (keep[i]) kept_keys->insert(data.calls[i].key);
    PolicyFn policy = [kept_keys](const SelectiveCheckpointContext& ctx, const OperatorHandle& op,
                                  const std::vector<IValue>&) {
      return kept_keys->count(call_key(ctx.scope, op.name(), ctx.index)) ? CheckpointPolicy::MUST_SAVE
                                                                         : CheckpointPolicy::PREFER_RECOMPUTE;
    };
    DryRunObserver observer(&data, profile, estimator_.get());
    observer.record_regions_ = record_regions;
    const ThreadStateSnapshot before;
    stats_detail::PlanningObserver* previous = stats_detail::planning_observer();
    const std::string where = who + ": dry run " + std::to_string(number) + " (" + phase + ")";
    RunResult r;
    {
      DryRun dry(imitated_);
      stats_detail::set_planning_observer(&observer);
      try {
        step_(policy, Device{kMeta});
      } catch (...) {
        stats_detail::set_planning_observer(previous);
        before.restore();
        const std::string differs = observer.mismatch();
        if (!differs.empty()) {
          std::string what = "an exception that is not a std::exception";
          try {
            throw;
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          throw CheckpointError(not_the_same_step(where, differs) + "; the step then threw: " + what);
        }
        rethrow_with_context(where + ": the step threw: ");
      }
      stats_detail::set_planning_observer(previous);
      // Counted from the step's start (the DryRun's), reserved from an empty cache.
      r.allocated_peak = max_memory_allocated(Device{kMeta});
      r.reserved_peak = imitated_ == kCUDA ? max_memory_reserved(Device{kMeta}) : 0;
      r.peak = counter_ == MemoryCounter::Reserved ? r.reserved_peak : r.allocated_peak;
      r.flops = checkpoint_stats().total.flops_recomputed;
      r.overhead = observer.overhead;
    }
    const std::string differs = observer.mismatch();
    if (!differs.empty()) throw CheckpointError(not_the_same_step(where, differs));
    if (profile) {  // nothing kept: the keep-set of no candidate
      memo_.emplace(std::vector<bool>(data.calls.size(), false), evaluated.size());
      evaluated.emplace_back(std::vector<bool>(data.calls.size(), false), r);
    } else if (memoized) {
      memo_.emplace(keep, evaluated.size());
      evaluated.emplace_back(keep, r);
    }
    return r;
  }

  // The cheapest keep-set priced so far whose peak fits `budget` (ties: the lower peak, then the
  // first priced); evaluated.size() if none fits.
  size_t cheapest_fitting(int64_t budget) const {
    size_t best = evaluated.size();
    for (size_t i = 0; i < evaluated.size(); ++i) {
      const RunResult& r = evaluated[i].second;
      if (r.peak > budget) continue;
      if (best == evaluated.size()) {
        best = i;
        continue;
      }
      const RunResult& b = evaluated[best].second;
      if (r.overhead < b.overhead || (r.overhead == b.overhead && r.peak < b.peak)) best = i;
    }
    return best;
  }

  Data data;
  int64_t dry_runs = 0;
  std::string who = "plan_checkpointing";  // for error messages: the caller,
  std::string phase = "profile";           // what it is doing,
  std::string profile_name = "the profiling run (dry run 1)";  // and the run every later one must repeat
  std::vector<std::pair<std::vector<bool>, RunResult>> evaluated;  // every keep-set priced, in order

 private:
  std::string not_the_same_step(const std::string& where, const std::string& differs) const {
    return where + ": the step is not the same step as in " + profile_name + ": " + differs + ". " + who +
           " calls the step many times, and each call must run the same model on the same shapes (build it from "
           "the same configuration every time)";
  }

  const PlannedStep& step_;
  std::shared_ptr<RuntimeEstimator> estimator_;
  DeviceType imitated_;
  MemoryCounter counter_;
  std::map<std::vector<bool>, size_t> memo_;  // keep-set -> index into evaluated
};

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

// The last dry run: the plan's figures, verified, and each region priced.
void finish_plan(Planner& planner, const std::vector<bool>& best, CheckpointPlan* plan) {
  Data& data = planner.data;
  for (Data::Region& r : data.regions) r.overhead = r.flops = 0, r.recomputed = 0;
  planner.phase = "the plan's final check";
  RunResult final_run = planner.run(best, false, /*record_regions=*/true);
  for (size_t i = 0; i < data.calls.size(); ++i) {
    data.calls[i].kept = best[i];
    if (best[i]) plan->kept.push_back(data.calls[i].key);
  }
  plan->candidates.clear();
  plan->replay_candidates.clear();
  for (size_t c : data.candidates) plan->candidates.push_back(data.calls[c].key);
  for (size_t c : data.replay_candidates) plan->replay_candidates.push_back(data.calls[c].key);
  plan->counter = planner.counter();
  plan->predicted_peak_bytes = final_run.peak;
  plan->predicted_allocated_peak_bytes = final_run.allocated_peak;
  plan->predicted_reserved_peak_bytes = final_run.reserved_peak;
  plan->recompute_flops = final_run.flops;
  plan->predicted_overhead_seconds = final_run.overhead;
  plan->estimate_mode = planner.estimate_mode();
  plan->data = std::make_shared<const Data>(std::move(data));
}

}  // namespace

CheckpointPlan plan_checkpointing(const PlannedStep& step, const PlannerOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  if (options.budget_bytes <= 0) {
    throw CheckpointError("plan_checkpointing: the memory budget must be positive, got " +
                          std::to_string(options.budget_bytes) + " bytes");
  }
  REMAT_CHECK(static_cast<bool>(step), "plan_checkpointing: the step function is empty");
  REMAT_CHECK(!options.device.is_meta(), "plan_checkpointing: options.device is the device to plan for (cpu or cuda), "
              "not meta");
  REMAT_CHECK(options.max_dry_runs >= 3, "plan_checkpointing: max_dry_runs must be at least 3, got ",
              options.max_dry_runs);
  if (options.counter == MemoryCounter::Reserved && !options.device.is_cuda()) {
    throw CheckpointError(std::string("plan_checkpointing: a budget on reserved memory needs a CUDA device, but "
                                      "options.device is ") +
                          options.device.str() +
                          " (only the CUDA caching allocator's reserved bytes are predicted; use "
                          "MemoryCounter::Allocated)");
  }
  Planner planner(step, options);
  Data& data = planner.data;

  // 1. Profile: nothing kept, every call recorded (the lowest peak any plan reaches).
  RunResult recompute_all = planner.run({}, /*profile=*/true);
  REMAT_CHECK(!data.regions.empty(), "plan_checkpointing: the step ran no checkpointed region with a selective "
              "policy (use the policy it is given, e.g. nn::ActivationCheckpointing::selective(policy))");
  const size_t n = data.calls.size();
  std::vector<size_t> candidates;
  for (size_t i = 0; i < n; ++i)
    if (data.calls[i].needed && !data.calls[i].mutated && data.calls[i].bytes > 0) candidates.push_back(i);
  // Outputs backward does not need, but a rerun would recompute on the way to one it does (the
  // scores of attention, before the softmax backward needs): keeping one replays it instead.
  std::vector<size_t> replay;
  for (size_t i = 0; i < n; ++i)
    if (!data.calls[i].needed && !data.calls[i].mutated && data.calls[i].bytes > 0 && data.calls[i].cost > 0)
      replay.push_back(i);
  // Recompute cost saved per byte kept, highest first; ties in forward order.
  auto by_value = [&](size_t a, size_t b) {
    return data.calls[a].cost * static_cast<double>(data.calls[b].bytes) >
           data.calls[b].cost * static_cast<double>(data.calls[a].bytes);
  };
  std::stable_sort(candidates.begin(), candidates.end(), by_value);
  std::stable_sort(replay.begin(), replay.end(), by_value);
  data.candidates = candidates;
  data.replay_candidates = replay;
  std::vector<size_t> keepable = candidates;  // both, by value
  keepable.insert(keepable.end(), replay.begin(), replay.end());
  std::stable_sort(keepable.begin(), keepable.end(), by_value);

  std::vector<bool> all(n, false);
  for (size_t c : candidates) all[c] = true;
  planner.phase = "keep-all";
  RunResult keep_all = planner.run(all);

  CheckpointPlan plan;
  plan.budget_bytes = options.budget_bytes;
  plan.recompute_all_peak_bytes = recompute_all.peak;
  plan.keep_all_peak_bytes = keep_all.peak;
  if (options.budget_bytes < recompute_all.peak) {
    const bool reserved = planner.counter() == MemoryCounter::Reserved;
    throw CheckpointError(
        "plan_checkpointing: no plan fits a budget of " + std::to_string(options.budget_bytes) + " bytes" +
        (reserved ? " of reserved memory" : "") + ": the minimum feasible peak is " +
        std::to_string(recompute_all.peak) + " bytes (" + mib(recompute_all.peak) +
        ", everything recomputable recomputed)" +
        (reserved ? "; its peak of allocated memory is " + std::to_string(recompute_all.allocated_peak) + " bytes (" +
                        mib(recompute_all.allocated_peak) + "), reserved counted from an empty cache"
                  : std::string()));
  }

  std::vector<std::vector<bool>> front;  // the knapsack's (analytic: no dry run), made if a search runs

  // 2.-4. The search for one budget, from the cheapest keep-set priced so far that fits it; every
  //       keep-set it prices joins planner.evaluated. At most `allowance` new dry runs.
  auto search_at = [&](int64_t budget, int64_t allowance, const std::string& rung_name) {
    auto fits = [&](const RunResult& r) { return r.peak <= budget; };
    const size_t start = planner.cheapest_fitting(budget);  // nothing kept fits: the budget is >= its peak
    std::vector<bool> best = planner.evaluated.at(start).first;
    RunResult best_run = planner.evaluated.at(start).second;
    auto better = [&](const RunResult& r) {
      return fits(r) && (r.overhead < best_run.overhead || (r.overhead == best_run.overhead && r.peak < best_run.peak));
    };
    const int64_t stop = planner.dry_runs + allowance;
    auto budget_left = [&] { return planner.dry_runs < stop; };
    // 2. The longest prefix of the candidates that fits.
    auto prefix = [&](size_t k) {
      std::vector<bool> s(n, false);
      for (size_t i = 0; i < k; ++i) s[candidates[i]] = true;
      return s;
    };
    planner.phase = rung_name + ": the longest prefix of the candidates that fits";
    size_t lo = 0, hi = candidates.size();  // prefix lo fits, prefix hi does not (the budget is below keep-all's peak)
    while (hi - lo > 1 && budget_left()) {
      size_t mid = lo + (hi - lo) / 2;
      RunResult r = planner.run(prefix(mid));
      if (fits(r)) {  // a longer prefix keeps a superset: it recomputes no more
        lo = mid;
        if (better(r)) best = prefix(mid), best_run = r;
      } else {
        hi = mid;
      }
    }
    auto try_set = [&](const std::vector<bool>& s) {
      if (!budget_left()) return false;
      RunResult r = planner.run(s);
      if (!better(r)) return false;
      best = s;
      best_run = r;
      return true;
    };
    // 3. Keep-sets by op: every candidate of some set of ops, which is what hand-made policies
    //    keep ("save every matmul"). Keeping all of a region's matmuls can beat any prefix of the
    //    per-call order, because a region rerun only for cheap ops costs little. Every subset of
    //    the ops when there are few, else each op alone and the prefixes of the ops by value.
    planner.phase = rung_name + ": keep-sets by op";
    std::vector<std::string> ops;  // by value: the op of the most valuable call first
    for (size_t c : keepable)
      if (std::find(ops.begin(), ops.end(), data.calls[c].op) == ops.end()) ops.push_back(data.calls[c].op);
    auto keep_ops = [&](const std::vector<bool>& chosen) {
      std::vector<bool> s(n, false);
      for (size_t c : keepable)
        s[c] = chosen[static_cast<size_t>(std::find(ops.begin(), ops.end(), data.calls[c].op) - ops.begin())];
      return s;
    };
    constexpr size_t kAllSubsetsUpTo = 6;
    if (ops.size() <= kAllSubsetsUpTo) {
      for (uint32_t mask = 1; mask + 1 < (1u << ops.size()); ++mask) {  // not none, not all (both tried)
        std::vector<bool> chosen(ops.size());
        for (size_t k = 0; k < ops.size(); ++k) chosen[k] = (mask >> k) & 1u;
        try_set(keep_ops(chosen));
      }
    } else {
      for (size_t k = 0; k < ops.size(); ++k) {
        std::vector<bool> alone(ops.size(), false), prefix(ops.size(), false);
        alone[k] = true;
        for (size_t j = 0; j <= k; ++j) prefix[j] = true;
        try_set(keep_ops(alone));
        if (k + 1 < ops.size()) try_set(keep_ops(prefix));
      }
    }
    // 3b. The knapsack's front: the cheapest of its keep-sets that fits, by binary search on the
    //     dry run's peak along it (bytes kept rise along the front, and the peak with them).
    planner.phase = rung_name + ": the knapsack's front";
    if (front.size() > 1) {
      size_t lo = 0, hi = front.size() - 1;  // front[0] keeps nothing: it fits
      while (lo < hi && budget_left()) {
        const size_t mid = lo + (hi - lo + 1) / 2;
        RunResult r = planner.run(front[mid]);
        if (fits(r)) {
          lo = mid;
          if (better(r)) best = front[mid], best_run = r;
        } else {
          hi = mid - 1;
        }
      }
    }
    // 4. Local improvement, each move priced by a dry run.
    //    Whole regions: keeping all a region needs means it is not rerun at all.
    planner.phase = rung_name + ": whole regions";
    for (const Data::Region& region : data.regions) {
      std::vector<bool> s = best;
      bool adds = false;
      for (size_t c : region.calls)
        if (all[c] && !s[c]) s[c] = adds = true;
      if (adds) try_set(s);
    }
    //    First fit: every output left, in order.
    planner.phase = rung_name + ": first fit";
    for (size_t c : keepable) {
      if (best[c]) continue;
      std::vector<bool> s = best;
      s[c] = true;
      try_set(s);
    }
    //    One-for-one swaps: a kept call of lower value out, a better one in.
    planner.phase = rung_name + ": swaps";
    for (size_t in : candidates) {
      if (best[in] || !budget_left()) continue;
      for (auto out = candidates.rbegin(); out != candidates.rend() && budget_left(); ++out) {
        if (!best[*out] || data.calls[*out].cost >= data.calls[in].cost) continue;
        std::vector<bool> s = best;
        s[*out] = false;
        s[in] = true;
        if (try_set(s)) break;
      }
    }
  };

  // The ladder: a larger budget never costs more. The plan for a budget is the cheapest keep-set
  // that fits it among all that the searches at the rungs up to the first at or above it priced,
  // each search starting from the cheapest keep-set known to fit its rung ("the plan of the next
  // smaller budget"). The rungs depend on the profile only, so for two budgets the larger one's
  // searches include the smaller one's: its choice is among more keep-sets, under a looser bound.
  std::vector<bool> best = all;
  if (options.budget_bytes < keep_all.peak) {
    std::vector<bool> keepable_mask(n, false);
    for (size_t c : keepable) keepable_mask[c] = true;
    front = knapsack_frontier(data, keepable_mask);
    const int64_t lo = recompute_all.peak, hi = keep_all.peak;
    // The rungs share max_dry_runs less the profile, keep-all and the final check: each may use an
    // equal share of what the rungs below it left (which depends on the profile only).
    const int64_t searches_start = planner.dry_runs;
    const int64_t shared = options.max_dry_runs - searches_start - 1;
    for (int j = 0; j <= kRungs; ++j) {
      const int64_t rung = j < kRungs ? lo + (hi - lo) * j / kRungs : hi - 1;  // the last: just below keep-all
      const int64_t allowance = (shared - (planner.dry_runs - searches_start)) / (kRungs + 1 - j);
      search_at(rung, allowance,
                "search at rung " + std::to_string(j + 1) + " of " + std::to_string(kRungs + 1) + " (" +
                    std::to_string(rung) + " bytes)");
      if (rung >= options.budget_bytes) break;
    }
    best = planner.evaluated.at(planner.cheapest_fitting(options.budget_bytes)).first;
  }

  plan.dry_runs = planner.dry_runs;
  finish_plan(planner, best, &plan);
  plan.planning_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return plan;
}

CheckpointPlan CheckpointPlan::with_kept(const PlannedStep& step, const std::vector<std::string>& keys) const {
  REMAT_CHECK(data != nullptr, "CheckpointPlan::with_kept: an empty plan (make one with plan_checkpointing)");
  Planner planner(step, data->options);
  planner.data = *data;
  planner.who = "CheckpointPlan::with_kept";
  planner.profile_name = "the profiling run of the plan";
  std::vector<bool> keep(planner.data.calls.size(), false);
  for (const std::string& k : keys) {
    auto it = planner.data.by_key.find(k);
    const auto& replay = planner.data.replay_candidates;
    if (it == planner.data.by_key.end() ||
        (!planner.data.calls[it->second].needed && std::find(replay.begin(), replay.end(), it->second) == replay.end())) {
      throw CheckpointError("CheckpointPlan::with_kept: '" + k + "' is not one of the plan's candidates");
    }
    keep[it->second] = true;
  }
  CheckpointPlan plan = *this;
  plan.kept.clear();
  finish_plan(planner, keep, &plan);
  return plan;
}

const char* toString(MemoryCounter counter) {
  return counter == MemoryCounter::Reserved ? "reserved" : "allocated";
}

std::string CheckpointPlan::check(Device device) const {
  REMAT_CHECK(data != nullptr, "CheckpointPlan::check: an empty plan (make one with plan_checkpointing)");
  const Device planned = data->options.device;
  if (counter != MemoryCounter::Reserved) return "";
  if (device.type != planned.type) {
    return "the plan bounds reserved memory on " + planned.str() + ", not on " + device.str();
  }
  const int64_t reserved = memory_reserved(device), allocated = memory_allocated(device);
  if (reserved == 0 && allocated == 0) return "";
  return "the plan predicts reserved memory from an empty cache, but " + device.str() + " holds " +
         std::to_string(reserved) + " bytes reserved in " + std::to_string(memory_segments(device)) + " segments (" +
         std::to_string(allocated) + " allocated by live tensors): free those tensors and call empty_cache(" +
         device.str() + ") first";
}

PolicyFn CheckpointPlan::policy() const {
  REMAT_CHECK(data != nullptr, "CheckpointPlan::policy: an empty plan (make one with plan_checkpointing)");
  std::shared_ptr<const Data> d = data;
  return [d](const SelectiveCheckpointContext& ctx, const OperatorHandle& op, const std::vector<IValue>& args) {
    std::string key = call_key(ctx.scope, op.name(), ctx.index);
    auto it = d->by_key.find(key);
    if (it == d->by_key.end()) {
      throw CheckpointError("CheckpointPlan: the call '" + key +
                            "' was never seen when this plan was made: the plan is for another model or "
                            "configuration (plan again for this one)");
    }
    const Data::Call& c = d->calls[it->second];
    std::vector<Shape> shapes = arg_shapes(args);
    if (shapes != c.arg_shapes) {
      std::ostringstream os;
      os << "CheckpointPlan: the call '" << key << "' has arguments of shapes";
      for (const Shape& s : shapes) os << " " << s;
      os << ", but the plan was made for";
      for (const Shape& s : c.arg_shapes) os << " " << s;
      os << ": the plan is for another configuration (plan again for this one)";
      throw CheckpointError(os.str());
    }
    return c.kept ? CheckpointPolicy::MUST_SAVE : CheckpointPolicy::PREFER_RECOMPUTE;
  };
}

std::string CheckpointPlan::summary() const {
  if (data == nullptr) return "(empty plan)\n";
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "checkpoint plan: budget %s, predicted peak %s (feasible %s .. %s), %zu kept\n",
                mib(budget_bytes).c_str(), mib(predicted_peak_bytes).c_str(), mib(recompute_all_peak_bytes).c_str(),
                mib(keep_all_peak_bytes).c_str(), kept.size());
  os << line;
  if (counter == MemoryCounter::Reserved) {
    std::snprintf(line, sizeof line, "bounds reserved memory, from an empty cache (peak allocated %s)\n",
                  mib(predicted_allocated_peak_bytes).c_str());
    os << line;
  }
  std::snprintf(line, sizeof line, "recompute: %.4g GFLOP, %.4g ms predicted (%s); %lld dry runs in %.2f s\n",
                recompute_flops / 1e9, predicted_overhead_seconds * 1e3, toString(estimate_mode),
                static_cast<long long>(dry_runs), planning_seconds);
  os << line;
  std::snprintf(line, sizeof line, "%-28s %6s %12s %8s %12s %10s %12s\n", "region", "kept", "kept bytes", "dropped",
                "drop bytes", "rerun ops", "cost ms");
  os << line;
  // Regions with the same scope (the same block in a step's second iteration) are one row.
  std::map<std::string, int> repeats;
  std::vector<const Data::Region*> rows;
  for (const Data::Region& r : data->regions)
    if (repeats[r.scope]++ == 0) rows.push_back(&r);
  for (const Data::Region* rp : rows) {
    const Data::Region& r = *rp;
    int64_t kept_n = 0, kept_b = 0, drop_n = 0, drop_b = 0;
    std::unordered_set<size_t> seen;
    for (size_t c : r.calls) {
      if (!seen.insert(c).second) continue;
      const Data::Call& call = data->calls[c];
      if (!call.needed || call.bytes == 0) continue;
      if (call.kept) ++kept_n, kept_b += call.bytes;
      else ++drop_n, drop_b += call.bytes;
    }
    std::string name = r.scope.empty() ? std::string("<top>") : r.scope;
    if (repeats[r.scope] > 1) name += " (x" + std::to_string(repeats[r.scope]) + ")";
    std::snprintf(line, sizeof line, "%-28s %6lld %12s %8lld %12s %10lld %12.4f\n", name.c_str(),
                  static_cast<long long>(kept_n),
                  mib(kept_b).c_str(), static_cast<long long>(drop_n), mib(drop_b).c_str(),
                  static_cast<long long>(r.recomputed), r.overhead * 1e3);
    os << line;
  }
  os << "(kept / dropped: calls whose outputs backward needs; a region repeated in the step, e.g. by a second\n"
        " training step, is one row with the figures of one instance)\n";
  return os.str();
}

}  // namespace remat
