// Mirrors torch/utils/checkpoint.py's non-reentrant machinery: _CheckpointFrame, _Holder,
// _Handle, _checkpoint_hook, _recomputation_hook and _StopRecomputationError.
//
// In forward, every tensor autograd saves inside the region is packed into a fresh Holder
// (only metadata is kept). The first unpack of one of them in a backward (graph task `gid`)
// reruns the region under the recomputation hooks, which hand each newly saved tensor to the
// next Holder in order and stop the rerun (early stop) as soon as the last Holder is filled.
// A recomputed tensor is returned once and dropped from its Holder at once.
#pragma once

#include <any>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/selective.h"
#include "engine/autograd/saved_variable.h"

namespace remat::checkpoint_detail {

// A recomputed tensor, owned by the Holder it was recomputed for (PyTorch's _Handle, with the
// WeakKeyDictionary entry folded in: the tensor lives exactly as long as the handle).
struct Handle {
  Handle(Tensor v, int64_t region);
  ~Handle();  // a recomputed tensor never unpacked stops counting when its holder dies
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Tensor take();  // hands the tensor out (once)
  Tensor value;
  int64_t region;
  int64_t bytes;
};

// What the forward pack hook stores instead of a tensor: per graph task, the handle of its
// recomputed value (nullptr once unpacked).
// A holder may instead keep the tensor itself ("direct"): under SAC, a saved tensor whose
// storage the region did not produce (a parameter, an input, a buffer) or that SAC's cache keeps
// anyway costs nothing to hold, and a region whose saved tensors are all direct is never rerun.
struct Holder {
  std::unordered_map<int64_t, std::shared_ptr<Handle>> handles;
  Tensor direct;              // an alias without history (no reference cycle through grad_fn)
  uint32_t direct_version = 0;
  sac_detail::SavedTensorKeep why = sac_detail::SavedTensorKeep::Drop;
  int64_t sac_calls_before = 0;  // SAC forward calls decided when this tensor was saved
};

// What the determinism check compares.
struct SavedTensorMetadata {
  Shape sizes;
  ScalarType dtype = kFloat;
  Device device;
  std::optional<uint64_t> checksum;  // determinism_check == "checksum"
  bool same_metadata(const SavedTensorMetadata& o) const {
    return sizes == o.sizes && dtype == o.dtype && device == o.device;
  }
  std::string str() const;
};

enum class DeterminismCheck { Default, None, Checksum };
DeterminismCheck parse_determinism_check(const std::string& mode);
// 64-bit FNV-1a over the tensor's values (read without dispatching an op).
uint64_t tensor_checksum(const Tensor& t);

// Thrown by the recomputation pack hook to end a rerun early; never escapes unpack.
struct StopRecomputation {};

class CheckpointFrame : public std::enable_shared_from_this<CheckpointFrame> {
 public:
  using RecomputeFn = std::function<void(const std::vector<Tensor>&)>;
  using UnpackErrorCallback = std::function<void(const CheckpointError&)>;

  CheckpointFrame(RecomputeFn recompute_fn, bool early_stop, DeterminismCheck check,
                  UnpackErrorCallback unpack_error_cb);

  // Saves the region's tensor inputs through whatever hooks are active (an enclosing
  // checkpoint packs them into its own holders).
  void save_inputs(const std::vector<Tensor>& inputs);
  std::vector<Tensor> get_inputs() const;

  // Says which saved tensors are kept as they are rather than dropped (SAC's view of the region).
  void set_keep_direct(std::function<sac_detail::SavedTensorKeep(const Tensor&)> keep,
                       std::function<int64_t()> sac_calls) {
    keep_direct_ = std::move(keep);
    sac_calls_ = std::move(sac_calls);
  }
  // After forward: the SAC call from which a rerun that stops early never gets (the call after
  // which the last dropped tensor was saved); 0 when every saved tensor is kept as is.
  int64_t first_unreachable_sac_call() const;

  // The forward hooks (_checkpoint_hook).
  std::any pack(const Tensor& x);
  Tensor unpack(const std::any& packed);

  // The recomputation pack hook for graph task gid (_recomputation_hook).
  std::any recompute_pack(const Tensor& x, int64_t gid);

  void check_recomputed_tensors_match(int64_t gid);

  int64_t id() const { return id_; }
  size_t num_saved() const { return weak_holders_.size(); }
  size_t num_dropped() const;  // saved tensors held as holders (to be refilled by a rerun)
  bool forward_completed = false;

 private:
  Tensor unpack_impl(const std::shared_ptr<Holder>& holder);
  SavedTensorMetadata metadata_of(const Tensor& t) const;

  int64_t id_;
  RecomputeFn recompute_fn_;
  bool early_stop_;
  DeterminismCheck check_;
  UnpackErrorCallback unpack_error_cb_;
  std::vector<autograd::SavedVariable> saved_args_;
  std::vector<std::weak_ptr<Holder>> weak_holders_;
  std::vector<SavedTensorMetadata> x_metadatas_;
  std::vector<std::string> saved_by_;  // node that saved each tensor (for messages and traces)
  std::function<sac_detail::SavedTensorKeep(const Tensor&)> keep_direct_;
  std::function<int64_t()> sac_calls_;
  std::unordered_map<int64_t, size_t> recomp_counter_;
  std::unordered_map<int64_t, size_t> refill_until_;  // early stop: after the last holder to refill
  std::unordered_map<int64_t, bool> is_recomputed_;
  bool ignore_saved_mismatch_ = false;
};

// A fresh region number (shared by both checkpoint kinds; the trace and checkpoint_stats use it).
int64_t new_region_id();

}  // namespace remat::checkpoint_detail
