// The methods of CheckpointPlan (see planner.h; no PyTorch counterpart: a plan is remat's own):
// its policy, summary, check and with_kept, and how a plan names calls and prints bytes.
#include "checkpoint/planner.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <unordered_set>

#include "checkpoint/offload.h"
#include "checkpoint/plan_data.h"
#include "checkpoint/planner_dry_runs.h"
#include "engine/core/allocator.h"

namespace remat {

namespace planner_detail {

std::string call_key(const std::string& scope, const std::string& op, int64_t index) {
  return (scope.empty() ? std::string("<top>") : scope) + " / " + op + " / #" + std::to_string(index);
}

std::vector<Shape> arg_shapes(const std::vector<IValue>& args) {
  std::vector<Shape> shapes;
  for (const IValue& a : args)
    if (a.isTensor()) shapes.push_back(a.toTensor().defined() ? a.toTensor().sizes() : Shape{-1});
  return shapes;
}

std::vector<Data::Call::Output> output_metas(const std::vector<IValue>& outputs) {
  std::vector<Data::Call::Output> metas;
  auto add = [&](const Tensor& t) {
    if (t.defined()) metas.push_back(Data::Call::Output{t.dtype(), t.sizes()});
  };
  for (const IValue& v : outputs) {
    if (v.isTensor()) add(v.toTensor());
    else if (v.isTensorList())
      for (const Tensor& t : v.toTensorListRef()) add(t);
  }
  return metas;
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace planner_detail

using namespace planner_detail;

CheckpointPlan CheckpointPlan::with_kept(const PlannedStep& step, const std::vector<std::string>& keys) const {
  return with_kept(step, keys, {});
}

CheckpointPlan CheckpointPlan::with_kept(const PlannedStep& step, const std::vector<std::string>& keys,
                                         const std::vector<std::string>& offloaded_keys) const {
  REMAT_CHECK(data != nullptr, "CheckpointPlan::with_kept: an empty plan (make one with plan_checkpointing)");
  if (data->loaded) {
    throw CheckpointError("CheckpointPlan::with_kept: a plan read from a file knows no candidates: price it on the step "
                          "first (plan.applied_to(step).with_kept(...))");
  }
  if (!offloaded_keys.empty() && !data->options.device.is_cuda()) {
    throw CheckpointError("CheckpointPlan::with_kept: offload needs a plan made for a CUDA device, but this plan is "
                          "for " + data->options.device.str());
  }
  PlannerOptions options = data->options;
  // A plan made without a host budget prices offloads too: the host bytes are what they are.
  if (!offloaded_keys.empty() && options.host_budget_bytes == 0) options.host_budget_bytes = INT64_MAX;
  Planner planner(step, options);
  planner.data = *data;
  planner.data.options.host_budget_bytes = data->options.host_budget_bytes;
  planner.who = "CheckpointPlan::with_kept";
  planner.profile_name = "the profiling run of the plan";
  const size_t n = planner.data.calls.size();
  KeepSet set{std::vector<bool>(n, false), offloaded_keys.empty() ? std::vector<bool>() : std::vector<bool>(n, false)};
  auto index_of = [&](const std::string& k) {
    auto it = planner.data.by_key.find(k);
    const auto& replay = planner.data.replay_candidates;
    if (it == planner.data.by_key.end() ||
        (!planner.data.calls[it->second].needed && std::find(replay.begin(), replay.end(), it->second) == replay.end())) {
      throw CheckpointError("CheckpointPlan::with_kept: '" + k + "' is not one of the plan's candidates");
    }
    return it->second;
  };
  for (const std::string& k : keys) set.keep[index_of(k)] = true;
  for (const std::string& k : offloaded_keys) {
    const size_t c = index_of(k);
    if (set.keep[c]) {
      throw CheckpointError("CheckpointPlan::with_kept: '" + k + "' is both kept and offloaded");
    }
    set.offload[c] = true;
  }
  CheckpointPlan plan = *this;
  finish_plan(planner, set, &plan);
  return plan;
}

const char* toString(MemoryCounter counter) {
  return counter == MemoryCounter::Reserved ? "reserved" : "allocated";
}

Device CheckpointPlan::device() const {
  REMAT_CHECK(data != nullptr, "CheckpointPlan::device: an empty plan (make one with plan_checkpointing)");
  return data->options.device;
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
  if (d->loaded) return loaded_policy(d);
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
    if (c.offloaded) {
      for (const IValue& a : args) {
        if (!a.isTensor() || !a.toTensor().defined()) continue;
        const Device device = a.toTensor().device();
        if (!offload_supported(device)) {
          throw CheckpointError("CheckpointPlan: the plan offloads '" + key + "' to host memory, but the call runs on " +
                                device.str() + ", which does not offload (the plan was made for " +
                                d->options.device.str() + ": run it there, or plan without host_budget_bytes)");
        }
        break;
      }
      return CheckpointPolicy::MUST_CPU_OFFLOAD;
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
                recompute_flops / 1e9, predicted_recompute_seconds * 1e3, toString(estimate_mode),
                static_cast<long long>(dry_runs), planning_seconds);
  os << line;
  const bool offload = host_budget_bytes > 0 || !offloaded.empty();
  if (offload) {
    std::snprintf(line, sizeof line,
                  "offload: %zu outputs to host and back, %s per step; host peak %s (budget %s); transfers %.4g ms "
                  "exposed at %.4g GB/s each way (modeled)\n",
                  offloaded.size(), mib(offloaded_bytes).c_str(), mib(predicted_host_peak_bytes).c_str(),
                  mib(host_budget_bytes).c_str(), predicted_transfer_seconds * 1e3, host_link_bandwidth / 1e9);
    os << line;
  }
  std::snprintf(line, sizeof line, "%-28s %6s %12s %8s %12s %10s %12s", "region", "kept", "kept bytes", "dropped",
                "drop bytes", "rerun ops", "cost ms");
  os << line;
  if (offload) std::snprintf(line, sizeof line, " %9s %12s", "offloaded", "offl bytes"), os << line;
  os << "\n";
  // Regions with the same scope (the same block in a step's second iteration) are one row.
  std::map<std::string, int> repeats;
  std::vector<const Data::Region*> rows;
  for (const Data::Region& r : data->regions)
    if (repeats[r.scope]++ == 0) rows.push_back(&r);
  // Every call is counted in one row, that of its first region's scope: the rows' kept calls add up
  // to the header's.
  std::unordered_set<size_t> counted;
  for (const Data::Region* rp : rows) {
    const Data::Region& r = *rp;
    int64_t kept_n = 0, kept_b = 0, drop_n = 0, drop_b = 0, off_n = 0, off_b = 0;
    for (const Data::Region& same : data->regions) {
      if (same.scope != r.scope) continue;
      for (size_t c : same.calls) {
        if (!counted.insert(c).second) continue;
        const Data::Call& call = data->calls[c];
        if (call.kept) ++kept_n, kept_b += call.bytes;
        else if (call.offloaded) ++off_n, off_b += call.bytes;
        else if (call.needed && call.bytes > 0) ++drop_n, drop_b += call.bytes;
      }
    }
    std::string name = r.scope.empty() ? std::string("<top>") : r.scope;
    if (repeats[r.scope] > 1) name += " (x" + std::to_string(repeats[r.scope]) + ")";
    std::snprintf(line, sizeof line, "%-28s %6lld %12s %8lld %12s %10lld %12.4f", name.c_str(),
                  static_cast<long long>(kept_n),
                  mib(kept_b).c_str(), static_cast<long long>(drop_n), mib(drop_b).c_str(),
                  static_cast<long long>(r.recomputed), r.overhead * 1e3);
    os << line;
    if (offload) {
      std::snprintf(line, sizeof line, " %9lld %12s", static_cast<long long>(off_n), mib(off_b).c_str());
      os << line;
    }
    os << "\n";
  }
  os << "(kept: every output the plan keeps, also those kept only to be replayed in a rerun; dropped: outputs\n"
        " backward needs that a rerun recomputes;"
     << (offload ? " offloaded: kept in pinned host memory between the region's forward and its rerun;\n" : "\n")
     << " a region repeated in the step, e.g. by a second training step,\n"
        " is one row with the figures of one instance)\n";
  return os.str();
}

}  // namespace remat
