// The planner's profile of a dry run (see planner_profile.h; no PyTorch counterpart).
#include "checkpoint/planner_profile.h"

#include <algorithm>
#include <sstream>

#include "checkpoint/output_storage.h"

namespace remat::planner_detail {

namespace {

uint64_t storage_id(const Tensor& t) { return t.defined() ? t.impl()->storage()->id() : 0; }

std::string describe(const std::string& key, size_t region, const std::vector<Shape>& shapes) {
  std::ostringstream os;
  os << "'" << key << "' in region " << region + 1 << " with arguments of shapes";
  for (const Shape& sh : shapes) os << " " << sh;
  if (shapes.empty()) os << " (none)";
  return os.str();
}

}  // namespace

std::string common_scope(const std::string& a, const std::string& b) {
  size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
  if ((k == a.size() || a[k] == '.') && (k == b.size() || b[k] == '.')) return a.substr(0, k);
  // Back to the last '.' before k: there both are at the end of the same whole name.
  const size_t dot = k == 0 ? std::string::npos : a.rfind('.', k - 1);
  return dot == std::string::npos ? std::string() : a.substr(0, dot);
}

void DryRunObserver::forward_call(int64_t region, const std::string& scope, const OperatorHandle& op, int64_t index,
                                  const std::vector<IValue>& args, const std::vector<IValue>& outputs, bool) {
  const size_t n = calls_seen_++;
  if (!profile_) {
    if (!mismatch_.empty() || !same_as_profile(n, region, scope, op, index, args)) return;
    region_of(region, scope);
    forward_calls_[region].push_back(data_->sequence[n].call);
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
    c.outputs = output_metas(outputs);
    c.cost = estimator_->estimate(op, args, outputs);
    c.copy_of = copied_call(r, op, args);
    data_->calls.push_back(std::move(c));
  }
  Data::Call& c = data_->calls[it->second];
  c.bytes = std::max(c.bytes, new_output_bytes(args, outputs));  // one call's (regions sharing a key repeat it)
  r.calls.push_back(it->second);
  forward_calls_[region].push_back(it->second);
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

int64_t DryRunObserver::copied_call(const Data::Region& region, const OperatorHandle& op,
                                    const std::vector<IValue>& args) const {
  static const char* const kCopies[] = {"aten::clone", "aten::contiguous", "aten::_to_copy"};
  if (std::find_if(std::begin(kCopies), std::end(kCopies), [&](const char* name) { return op.name() == name; }) ==
      std::end(kCopies))
    return -1;
  const IValue* source = nullptr;
  for (const IValue& a : args) {
    if (!a.isTensor() || !a.toTensor().defined()) continue;
    if (source != nullptr) return -1;  // a copy of two tensors is no copy of one
    source = &a;
  }
  if (source == nullptr) return -1;
  auto p = producer_.find(storage_id(source->toTensor()));
  // Only a call of the same region: a rerun of this region never recomputes another's.
  if (p == producer_.end() || std::find(region.calls.begin(), region.calls.end(), p->second) == region.calls.end())
    return -1;
  return static_cast<int64_t>(p->second);
}

void DryRunObserver::released(int64_t region, int64_t seq) {
  auto it = forward_calls_.find(region);
  if (it != forward_calls_.end() && seq >= 0 && static_cast<size_t>(seq) < it->second.size())
    released_.push_back(it->second[static_cast<size_t>(seq)]);
}

void DryRunObserver::saved(int64_t, const Tensor& t) {
  if (!profile_) return;
  auto p = producer_.find(storage_id(t));
  if (p != producer_.end()) data_->calls[p->second].needed = true;
}

void DryRunObserver::recomputed(int64_t region, const OperatorHandle& op, const std::vector<IValue>& args,
                                const std::vector<IValue>& outputs) {
  double c = estimator_->estimate(op, args, outputs);
  overhead_ += c;
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

std::string DryRunObserver::mismatch() {
  if (mismatch_.empty() && !profile_ && calls_seen_ < data_->sequence.size()) {
    const Data::Seen& want = data_->sequence[calls_seen_];
    mismatch_ = "it made " + std::to_string(calls_seen_) + " op calls in checkpointed regions, the profiling run " +
                std::to_string(data_->sequence.size()) + ": the first missing one is call " +
                std::to_string(calls_seen_ + 1) + ", " + describe(data_->calls[want.call].key, want.region,
                                                                  want.arg_shapes);
  }
  return mismatch_;
}

bool DryRunObserver::same_as_profile(size_t n, int64_t region, const std::string& scope, const OperatorHandle& op,
                                     int64_t index, const std::vector<IValue>& args) {
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
Data::Region& DryRunObserver::region_of(int64_t region, const std::string& scope) {
  auto [it, fresh] = region_index_.emplace(region, region_index_.size());
  if (fresh && profile_) data_->regions.push_back(Data::Region{scope, {}, 0, 0, 0});
  if (it->second >= data_->regions.size()) {  // same_as_profile lets no such call through: a guard
    throw CheckpointError("plan_checkpointing: the plan's step changed shape: a dry run ran region " +
                          std::to_string(it->second + 1) + ", where the profiling run ran " +
                          std::to_string(data_->regions.size()) + " regions");
  }
  Data::Region& r = data_->regions[it->second];
  if (profile_ && !fresh) r.scope = common_scope(r.scope, scope);
  return r;
}

}  // namespace remat::planner_detail
