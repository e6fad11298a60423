// Mirrors torch/utils/checkpoint.py: _CheckpointFrame, _checkpoint_hook and _recomputation_hook
// (the driver, _checkpoint_without_reentrant_generator, is checkpoint/non_reentrant.cpp).
#include "checkpoint/frame.h"

#include <atomic>
#include <cstring>
#include <sstream>

#include "checkpoint/selective.h"
#include "checkpoint/stats_detail.h"
#include "checkpoint/trace.h"
#include "engine/autograd/engine.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/saved_variable_hooks.h"
#include "ops/functions.h"

namespace remat::checkpoint_detail {

using autograd::Engine;

namespace {

const char* const kDebugTip =
    "\nTip: To see a more detailed error message, either pass `debug=True` to "
    "`torch.utils.checkpoint.checkpoint(...)` (CheckpointOptions::debug in remat) or wrap the code block "
    "with `set_checkpoint_debug_enabled(true)` to enable checkpoint-debug mode globally.";

std::atomic<int64_t> g_next_frame_id{1};
}  // namespace

int64_t new_region_id() { return g_next_frame_id.fetch_add(1); }

namespace {

std::string describe(const Tensor& t) {
  std::ostringstream os;
  os << "Tensor" << t.sizes() << " " << toString(t.dtype());
  if (!t.device().is_cpu()) os << " " << t.device();
  return os.str();
}

}  // namespace

Handle::Handle(Tensor v, int64_t r) : value(std::move(v)), region(r), bytes(value.nbytes()) {
  stats_detail::Update(region)->holder_bytes_held += bytes;
}
Handle::~Handle() {
  if (bytes != 0) stats_detail::Update(region)->holder_bytes_held -= bytes;
}
Tensor Handle::take() {
  if (bytes != 0) stats_detail::Update(region)->holder_bytes_held -= bytes;
  bytes = 0;
  return std::move(value);
}

std::string SavedTensorMetadata::str() const {
  std::ostringstream os;
  os << "{shape: " << sizes << ", dtype: " << toString(dtype) << ", device: " << device;
  if (checksum) os << ", checksum: 0x" << std::hex << *checksum;
  os << "}";
  return os.str();
}

DeterminismCheck parse_determinism_check(const std::string& mode) {
  if (mode == "default") return DeterminismCheck::Default;
  if (mode == "none") return DeterminismCheck::None;
  if (mode == "checksum") return DeterminismCheck::Checksum;
  throw CheckpointError("torch.utils.checkpoint: determinism_check should be one of ['default', 'none', "
                        "'checksum'], but got '" + mode + "'");
}

uint64_t tensor_checksum(const Tensor& t) {
  // Values are read through to_vector (a raw host copy, no op dispatched), so the check adds
  // no op calls that a dispatch mode (SAC) would see in forward but not in recomputation.
  uint64_t h = 14695981039346656037ull;
  for (double v : t.to_vector()) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 8; ++i) {
      h ^= (bits >> (8 * i)) & 0xffu;
      h *= 1099511628211ull;
    }
  }
  return h;
}

CheckpointFrame::CheckpointFrame(RecomputeFn recompute_fn, bool early_stop, DeterminismCheck check,
                                 UnpackErrorCallback unpack_error_cb)
    : id_(new_region_id()), recompute_fn_(std::move(recompute_fn)), early_stop_(early_stop),
      check_(check), unpack_error_cb_(std::move(unpack_error_cb)) {}

void CheckpointFrame::save_inputs(const std::vector<Tensor>& inputs) {
  saved_args_.clear();
  for (const Tensor& t : inputs) saved_args_.emplace_back(t, /*is_output=*/false);
}

std::vector<Tensor> CheckpointFrame::get_inputs() const {
  std::vector<Tensor> out;
  out.reserve(saved_args_.size());
  for (const autograd::SavedVariable& v : saved_args_) out.push_back(v.unpack());
  return out;
}

SavedTensorMetadata CheckpointFrame::metadata_of(const Tensor& t) const {
  SavedTensorMetadata m;
  if (check_ == DeterminismCheck::None) return m;
  m.sizes = t.sizes();
  m.dtype = t.dtype();
  m.device = t.device();
  if (check_ == DeterminismCheck::Checksum) {
    if (t.is_meta())
      throw CheckpointError(detail::str("remat checkpoint: determinism_check='checksum' needs values, but a tensor "
                                        "saved in this region is on the Meta device (shape ", t.sizes(),
                                        "); a dry run can check metadata only (determinism_check='default')"));
    m.checksum = tensor_checksum(t);
  }
  return m;
}

std::any CheckpointFrame::pack(const Tensor& x) {
  auto holder = std::make_shared<Holder>();
  weak_holders_.push_back(holder);
  stats_detail::Update(id_)->tensors_packed += 1;
  x_metadatas_.push_back(metadata_of(x));  // pack hooks run under no-grad
  saved_by_.push_back(autograd::current_saving_node());
  if (stats_detail::PlanningObserver* o = stats_detail::planning_observer()) o->saved(id_, x);
  holder->why = keep_direct_ ? keep_direct_(x) : sac_detail::SavedTensorKeep::Drop;
  const bool direct = holder->why != sac_detail::SavedTensorKeep::Drop;
  if (direct) {
    holder->direct = make_alias(x, x.sizes(), x.strides(), x.impl()->storage_offset());
    holder->direct_version = x._version();
  }
  if (sac_calls_) holder->sac_calls_before = sac_calls_();
  if (checkpoint_trace_enabled()) {
    trace::emit("checkpoint #" + std::to_string(id_) + ": pack #" + std::to_string(weak_holders_.size() - 1) + " " +
                (saved_by_.back().empty() ? std::string("?") : saved_by_.back()) + " " + describe(x) +
                (direct ? " -> kept as is (not produced here, or kept by SAC)" : " -> holder (data not kept)"));
  }
  return holder;
}

size_t CheckpointFrame::num_dropped() const {
  size_t n = 0;
  for (const auto& w : weak_holders_) {
    auto h = w.lock();
    if (h && !h->direct.defined()) ++n;
  }
  return n;
}

int64_t CheckpointFrame::first_unreachable_sac_call() const {
  for (size_t i = weak_holders_.size(); i > 0; --i) {
    auto h = weak_holders_[i - 1].lock();
    if (h && !h->direct.defined()) return h->sac_calls_before;
  }
  return 0;
}

Tensor CheckpointFrame::unpack(const std::any& packed) {
  auto holder = std::any_cast<std::shared_ptr<Holder>>(packed);
  if (!unpack_error_cb_) return unpack_impl(holder);
  try {
    return unpack_impl(holder);
  } catch (const CheckpointError& e) {
    unpack_error_cb_(e);
    throw;
  }
}

Tensor CheckpointFrame::unpack_impl(const std::shared_ptr<Holder>& holder) {
  if (holder->direct.defined()) {
    // Kept as is: no rerun. An in-place change since forward is caught as SavedVariable would.
    const uint32_t now = holder->direct._version();
    if (now != holder->direct_version && holder->why == sac_detail::SavedTensorKeep::KeptBySac) {
      throw Error(detail::str("Tensor cached during selective activation checkpoint has been mutated (a tensor "
                              "backward reads from the cache, version ", holder->direct_version,
                              " when cached, now ", now, ")"));
    }
    if (now != holder->direct_version && holder->why == sac_detail::SavedTensorKeep::NotProducedHere) {
      throw CheckpointError(detail::str(
          "one of the variables needed for gradient computation has been modified by an inplace operation: [",
          toString(holder->direct.dtype()), " ", holder->direct.sizes(), "] is at version ", holder->direct._version(),
          "; expected version ", holder->direct_version, " instead (a tensor checkpoint kept from the forward pass)."));
    }
    return holder->direct;
  }
  int64_t gid = Engine::current_graph_task_id();
  if (gid == -1) gid = Engine::new_graph_task_id();  // unpacked outside backward: a fresh id

  if (!is_recomputed_[gid]) {
    // Early stop after the last holder that needs refilling: direct ones need none, nor do
    // those whose node has run already (freed).
    size_t until = 0, to_refill = 0;
    for (size_t i = weak_holders_.size(); i > 0; --i) {
      auto h = weak_holders_[i - 1].lock();
      if (h && !h->direct.defined()) {
        if (until == 0) until = i;
        ++to_refill;
      }
    }
    refill_until_[gid] = until;
    std::vector<Tensor> args = get_inputs();
    if (checkpoint_trace_enabled()) {
      trace::emit("checkpoint #" + std::to_string(id_) + ": recompute start (graph task " + std::to_string(gid) +
                  ", " + std::to_string(to_refill) + " of " + std::to_string(weak_holders_.size()) +
                  " saved tensors to refill, early_stop=" +
                  (early_stop_ ? "true" : "false") + ")");
    }
    bool stopped_early = false;
    try {
      std::weak_ptr<CheckpointFrame> self = weak_from_this();
      autograd::saved_tensors_hooks recomputation(
          [self, gid](const Tensor& x) { return self.lock()->recompute_pack(x, gid); },
          [](const std::any& p) { return std::any_cast<Tensor>(p); });
      autograd::EnableGradGuard enable_grad;
      MemoryPhaseGuard phase(MemoryPhase::Recompute);
      recompute_fn_(args);
    } catch (const StopRecomputation&) {
      stopped_early = true;
    }
    is_recomputed_[gid] = true;
    stats_detail::Update(id_)->recomputations += 1;
    if (checkpoint_trace_enabled()) {
      trace::emit("checkpoint #" + std::to_string(id_) + ": recompute " +
                  (stopped_early ? "stopped early: the last needed tensor was refilled (" : "ran to the end (") +
                  std::to_string(recomp_counter_[gid]) + " tensors saved)");
    }
    check_recomputed_tensors_match(gid);
  }

  auto it = holder->handles.find(gid);
  REMAT_INTERNAL_ASSERT(it != holder->handles.end(), "checkpoint: holder was not refilled by recomputation");
  if (it->second == nullptr) {
    throw CheckpointError(
        "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already unpacked once. If you "
        "are calling ctx.saved_tensors in backward, make sure to do so only once. Otherwise please open an "
        "issue with details on your use case.");
  }
  Tensor ret = it->second->take();
  it->second = nullptr;  // freed as soon as it is used, even with retain_graph
  if (checkpoint_trace_enabled()) {
    size_t idx = 0;
    for (size_t i = 0; i < weak_holders_.size(); ++i)
      if (weak_holders_[i].lock() == holder) idx = i;
    trace::emit("checkpoint #" + std::to_string(id_) + ": unpack #" + std::to_string(idx) + " " + saved_by_[idx] +
                " (graph task " + std::to_string(gid) + ") <- recomputed " + describe(ret));
  }
  return ret;
}

std::any CheckpointFrame::recompute_pack(const Tensor& x, int64_t gid) {
  Tensor kept = x.requires_grad() ? detach(x) : x;
  claim_memory(kept, MemoryCategory::Activation);
  size_t recomp_idx = recomp_counter_[gid]++;
  if (recomp_idx >= weak_holders_.size()) {
    REMAT_INTERNAL_ASSERT(!early_stop_, "checkpoint: recomputation saved more tensors with early stop on");
    if (!forward_completed) {
      // grad() inside the checkpointed forward with early stop off: tolerated (Rule 6).
      ignore_saved_mismatch_ = true;
      return kept;
    }
    throw CheckpointError(
        "torch.utils.checkpoint: trying to save more tensors during recomputation than during the original "
        "forward pass.\nNumber of tensors saved during forward: " +
        std::to_string(weak_holders_.size()) + std::string(kDebugTip));
  }
  // The holder may be gone: a backward inside the forward may have freed it already.
  if (auto holder = weak_holders_[recomp_idx].lock(); holder && !holder->direct.defined()) {
    auto it = holder->handles.find(gid);
    REMAT_INTERNAL_ASSERT(it == holder->handles.end() || it->second == nullptr);
    holder->handles[gid] = std::make_shared<Handle>(kept, id_);
  }
  if (early_stop_ && recomp_counter_[gid] == refill_until_[gid]) throw StopRecomputation{};
  return kept;
}

void CheckpointFrame::check_recomputed_tensors_match(int64_t gid) {
  if (ignore_saved_mismatch_) return;
  // With early stop the rerun ends after the last holder to refill; otherwise it saves them all.
  const size_t expected = early_stop_ ? refill_until_[gid] : weak_holders_.size();
  if (expected != recomp_counter_[gid]) {
    throw CheckpointError(
        "torch.utils.checkpoint: A different number of tensors was saved during the original forward and "
        "recomputation.\nNumber of tensors saved during forward: " +
        std::to_string(weak_holders_.size()) + "\nNumber of tensors saved during recomputation: " +
        std::to_string(recomp_counter_[gid]) + "." + kDebugTip);
  }
  if (check_ == DeterminismCheck::None) return;
  std::string mismatched;
  std::string first_value_mismatch;
  for (size_t idx = 0; idx < weak_holders_.size(); ++idx) {
    auto holder = weak_holders_[idx].lock();
    if (!holder || holder->direct.defined() || idx >= recomp_counter_[gid]) continue;
    auto it = holder->handles.find(gid);
    REMAT_INTERNAL_ASSERT(it != holder->handles.end() && it->second != nullptr);
    SavedTensorMetadata recomputed = metadata_of(it->second->value);
    const SavedTensorMetadata& saved = x_metadatas_[idx];
    if (!saved.same_metadata(recomputed)) {
      mismatched += "tensor at position " + std::to_string(idx) + " (saved by " + saved_by_[idx] +
                    "):\nsaved metadata: " + saved.str() + "\nrecomputed metadata: " + recomputed.str() + "\n";
    } else if (first_value_mismatch.empty() && saved.checksum != recomputed.checksum) {
      first_value_mismatch = "tensor at position " + std::to_string(idx) + " (saved by " + saved_by_[idx] +
                             "): checksum in forward " + saved.str() + ", after recomputation " + recomputed.str();
    }
  }
  if (!mismatched.empty()) {
    throw CheckpointError(
        "torch.utils.checkpoint: Recomputed values for the following tensors have different metadata than "
        "during the forward pass.\n" +
        mismatched + kDebugTip);
  }
  if (!first_value_mismatch.empty()) {
    throw CheckpointError(
        "remat checkpoint: determinism_check='checksum': recomputed values differ from the forward pass "
        "(a nondeterministic kernel, or global state that changed between forward and backward). First "
        "tensor whose values differ: " +
        first_value_mismatch);
  }
}

}  // namespace remat::checkpoint_detail
