// No PyTorch counterpart (see selective_offload.h): SAC's offloaded outputs, their release at the
// region's forward end and the prefetch one region early.
#include "checkpoint/selective_offload.h"

#include "checkpoint/output_storage.h"
#include "checkpoint/stats_detail.h"
#include "checkpoint/tensor_returns.h"
#include "checkpoint/trace.h"
#include "ops/functions.h"

namespace remat::sac_detail {

bool RegionOffloads::decide(int64_t region, CheckpointPolicy policy, const std::string& where,
                            const std::vector<IValue>& args, std::vector<IValue>& out) {
  bool offload = true;
  std::string why_not_offloaded;
  Device device{kCPU};
  bool any = false;
  for_each_tensor(out, [&](Tensor& t) {
    if (!t.defined()) return;
    if (!any) device = t.device();
    any = true;
    if (!offload_supported(t.device())) {
      offload = false;
    } else if (!offload_detail::OffloadedTensor::can_offload(t) || shares_storage_with(t, args)) {
      offload = false;
      if (why_not_offloaded.empty())
        why_not_offloaded = "an output is not the whole of a storage of its own (a view or an alias)";
    }
  });
  if (!any) offload = false;
  if (!offload) {
    // Acts as SAVE.
    if (any && !offload_supported(device)) {
      if (!as_save_traced_ && checkpoint_trace_enabled()) {
        trace::emit("sac #" + std::to_string(region) + ": " + toString(policy) + " acts as SAVE on " + device.str() +
                    " (offload needs a CUDA device): " + where +
                    " and every later offload answer of this region are kept where they are");
      }
      as_save_traced_ = true;
    } else if (!why_not_offloaded.empty() && checkpoint_trace_enabled()) {
      trace::emit("sac #" + std::to_string(region) + ": " + toString(policy) + " for " + where +
                  " acts as SAVE: " + why_not_offloaded);
    }
  } else {
    device_ = device;
  }
  return offload;
}

int64_t RegionOffloads::add(int64_t region, const std::string& where, std::vector<IValue>& values, int64_t* index) {
  const size_t i = outputs_.size();
  *index = static_cast<int64_t>(i);
  outputs_.push_back(Output{where, {}});
  int64_t tensors = 0, bytes = 0;
  for_each_tensor(values, [&](Tensor& t) {
    if (!t.defined()) {
      outputs_[i].tensors.push_back(nullptr);
      return;
    }
    outputs_[i].tensors.push_back(std::make_unique<offload_detail::OffloadedTensor>(detach(t), "the output of " + where));
    bytes += t.nbytes();
    ++tensors;
    t = Tensor();
  });
  region_ = region;
  order_.push_back(i);
  stats_detail::Update s(region);
  s->sac_tensors_offloaded += tensors;
  s->sac_bytes_offloaded += bytes;
  return bytes;
}

bool RegionOffloads::holds(int64_t index) const {
  return index >= 0 && !outputs_[static_cast<size_t>(index)].tensors.empty();
}

void RegionOffloads::take(int64_t index, std::vector<IValue>& values) {
  auto& tensors = outputs_[static_cast<size_t>(index)].tensors;
  size_t k = 0;
  for_each_tensor(values, [&](Tensor& t) {
    std::unique_ptr<offload_detail::OffloadedTensor>& o = tensors[k++];
    if (o) t = o->take();
  });
}

void RegionOffloads::drop(int64_t index) {
  if (index >= 0) outputs_[static_cast<size_t>(index)].tensors.clear();
}

bool RegionOffloads::has_offloads_to_fetch() const {
  for (size_t i : order_)
    for (const auto& o : outputs_[i].tensors)
      if (o && !o->taken() && !o->on_device()) return true;
  return false;
}

void RegionOffloads::fetch_offloads() {
  for (size_t i : order_)
    for (const auto& o : outputs_[i].tensors)
      if (o) o->fetch();
}

void RegionOffloads::release_device_tensors() {
  for (size_t i : order_)
    for (const auto& o : outputs_[i].tensors) {
      if (o) o->check_unmodified("the output of " + outputs_[i].where);
    }
  for (size_t i : order_)
    for (const auto& o : outputs_[i].tensors)
      if (o) o->wait_copy();
  for (size_t i : order_)
    for (const auto& o : outputs_[i].tensors)
      if (o) o->release_device();
}

namespace {
// The calling thread's regions that offloaded something, in forward order: a region's recompute
// prefetches the nearest earlier one's offloaded tensors (selective.h, "prefetch point").
thread_local std::vector<std::weak_ptr<RegionOffloads>> tls_offload_regions;
}  // namespace

void register_offload_region(const std::shared_ptr<RegionOffloads>& offloads) {
  auto& list = tls_offload_regions;
  for (auto it = list.begin(); it != list.end();) it = it->expired() ? list.erase(it) : std::next(it);
  list.push_back(offloads);
}

void prefetch_for_recompute(const std::shared_ptr<RegionOffloads>& self, int64_t region) {
  if (self->empty() && tls_offload_regions.empty()) return;
  self->fetch_offloads();
  auto& list = tls_offload_regions;
  size_t me = list.size();
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].lock() == self) me = i;
  if (me == list.size()) {
    // A region without offloads of its own: the previous one is the last earlier region.
    me = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      auto s = list[i].lock();
      if (s && s->region() < region) me = i + 1;
    }
  }
  for (size_t i = me; i > 0; --i) {
    auto s = list[i - 1].lock();
    if (!s || (!self->empty() && s->device().type != self->device().type)) continue;
    if (!s->has_offloads_to_fetch()) continue;
    if (checkpoint_trace_enabled())
      trace::emit("sac #" + std::to_string(region) + ": recompute starts; prefetching the offloaded outputs of sac #" +
                  std::to_string(s->region()) + " to " + s->device().str());
    s->fetch_offloads();
    break;
  }
}

}  // namespace remat::sac_detail
