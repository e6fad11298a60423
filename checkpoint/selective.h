// Mirrors torch/utils/checkpoint.py's selective activation checkpointing (SAC):
// CheckpointPolicy, SelectiveCheckpointContext, _CachingTorchDispatchMode,
// _CachedTorchDispatchMode and create_selective_checkpoint_contexts.
//
//   CheckpointOptions o;
//   o.context_fn = [] { return create_selective_checkpoint_contexts({"aten::mm"}); };
//   Tensor y = checkpoint(block, x, o);   // mm outputs are kept; everything else recomputed
//
// Two layers (the seed's point): vanilla checkpoint still drops every saved tensor and reruns
// the region on first unpack; underneath, a dispatch mode sees each op call. In forward the
// caching mode asks the policy once per call and stores the outputs it should save under
// (op, index); in the rerun the cached mode returns those outputs instead of running the op.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "engine/dispatch/dispatcher.h"

namespace remat {

// MUST_* and PREFER_* behave alike in eager execution; MUST_* answers are "decisive" for
// policies::compose.
//
// *_CPU_OFFLOAD (PyTorch's names; in PyTorch's eager SAC they fall through to recomputation):
// the output is kept, but in pinned host memory rather than on the device. On a CUDA device (and
// in a Meta dry run imitating CUDA, which counts the same bytes at the same points):
//   * forward: right after the op, its output is copied to a new pinned host buffer on a side
//     stream (the offload stream; the copy waits on an event recorded on the current stream, and
//     the caching allocator's record_stream keeps the block for it). The device tensor stays
//     usable by the rest of the region.
//   * release point: when the region's forward ends, the host waits for the region's copies, then
//     SAC drops its device tensors (their blocks are freed there unless something else holds
//     them). Tensors autograd saved from them are not kept (holders): backward reruns the region.
//   * prefetch point: when a region's recompute starts, its own offloaded tensors not yet brought
//     back are copied to the device (fetch), then those of the nearest earlier region (in forward
//     order) that still has offloaded tensors in host memory: one region early, on the offload
//     stream, while this region's recompute and backward run.
//   * replay: where the cached mode would return a kept output, it waits for that copy, frees the
//     host buffer and returns the device copy: the producer's bits, so the gradient is bitwise
//     that of MUST_SAVE.
// An output that is not the whole of its own storage (a view, an alias of an input) is kept as
// SAVE would keep it (the trace says so). On the CPU device (and a Meta run counting like the
// CPU) the offload policies act as SAVE, and the trace says so once per region. Pinned memory
// that cannot be had throws CheckpointError naming the bytes (never a silent fall back to keeping
// the tensor). Host bytes: offloaded_memory_allocated(device) (engine/core/allocator.h).
enum class CheckpointPolicy { MUST_SAVE, PREFER_SAVE, MUST_RECOMPUTE, PREFER_RECOMPUTE, MUST_CPU_OFFLOAD,
                              PREFER_CPU_OFFLOAD };
const char* toString(CheckpointPolicy p);
// Kept on the device (SAVE answers only; offload answers keep the output elsewhere).
inline bool is_save(CheckpointPolicy p) { return p == CheckpointPolicy::MUST_SAVE || p == CheckpointPolicy::PREFER_SAVE; }
// Moved to pinned host memory (where the device offloads; SAVE elsewhere).
inline bool is_offload(CheckpointPolicy p) {
  return p == CheckpointPolicy::MUST_CPU_OFFLOAD || p == CheckpointPolicy::PREFER_CPU_OFFLOAD;
}
// Not recomputed: kept on the device or offloaded.
inline bool is_kept(CheckpointPolicy p) { return is_save(p) || is_offload(p); }
// The decisive answers (MUST_SAVE, MUST_RECOMPUTE, MUST_CPU_OFFLOAD), for policies::compose.
inline bool is_must(CheckpointPolicy p) {
  return p == CheckpointPolicy::MUST_SAVE || p == CheckpointPolicy::MUST_RECOMPUTE || p == CheckpointPolicy::MUST_CPU_OFFLOAD;
}

struct SelectiveCheckpointContext {
  bool is_recompute = false;  // always false when the policy is asked (it is asked in forward only)
  std::string scope;          // module/scope path of this call, e.g. "layers.3.mlp.fc2"
  int64_t index = 0;          // occurrence of this op in this region: 0, 1, 2, ...
};

using PolicyFn = std::function<CheckpointPolicy(const SelectiveCheckpointContext&, const OperatorHandle&,
                                                const std::vector<IValue>&)>;
using BoolPolicyFn =
    std::function<bool(const SelectiveCheckpointContext&, const OperatorHandle&, const std::vector<IValue>&)>;

// true -> MUST_SAVE, false -> PREFER_RECOMPUTE (PyTorch's _policy_from_bool).
PolicyFn policy_from_bool(BoolPolicyFn fn);

CheckpointContexts create_selective_checkpoint_contexts(PolicyFn policy, bool allow_cache_entry_mutation = false);
CheckpointContexts create_selective_checkpoint_contexts(BoolPolicyFn policy, bool allow_cache_entry_mutation = false);
// Saves the listed ops (MUST_SAVE), recomputes the rest. Every name must be a registered op:
// an unknown one throws, naming it and the closest registered names (PyTorch silently matches
// nothing for `aten.mm` vs `aten.mm.default`; remat does not).
CheckpointContexts create_selective_checkpoint_contexts(const std::vector<std::string>& ops_to_save,
                                                        bool allow_cache_entry_mutation = false);

namespace sac_detail {
// Lets a checkpoint frame tell its selective modes which region they serve (for stats and
// traces). No-op for other modes.
void bind_region(const CheckpointContexts& contexts, int64_t region);
// For a SAC forward mode: whether a tensor saved for backward is held as it is (its storage was
// not produced in the region, or SAC keeps it) rather than dropped. Empty for other contexts.
enum class SavedTensorKeep { Drop, NotProducedHere, KeptBySac, KeptBySacMutable };
std::function<SavedTensorKeep(const Tensor&)> keep_direct_fn(const CheckpointContexts& contexts);
// The region's forward is over: forget which storages it produced, and release the device
// tensors of its offloaded outputs (after waiting for their copies to host).
void forward_done(const CheckpointContexts& contexts);
// How many op calls the SAC forward mode has decided on so far (0 for other contexts).
int64_t forward_calls(const CheckpointContexts& contexts);
// Drops the cached outputs of the calls from number `seq` on: a rerun that stops early never
// reaches them (and what backward needs of them, the frame holds itself).
void release_calls_from(const CheckpointContexts& contexts, int64_t seq);
// Ops SAC never counts or shows to a policy (PyTorch's SAC_IGNORED_OPS).
bool is_ignored(const OperatorHandle& op);
}  // namespace sac_detail

}  // namespace remat
