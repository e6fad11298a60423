// Mirrors torch/utils/checkpoint.py: checkpoint, checkpoint_sequential, CheckpointError,
// set_checkpoint_early_stop, set_checkpoint_debug_enabled.
//
//   // Keep only x; recompute the region's activations when backward needs them.
//   Tensor y = checkpoint([&](const Tensor& h) { return relu(linear(h, w1, b1)); }, x);
//
// Non-reentrant (the default): one CheckpointFrame per call; saved-tensor hooks replace every
// tensor autograd saves inside the region by a Holder, and the first unpack in a backward
// recomputes the region (checkpoint/frame.h). Reentrant (use_reentrant = true): an autograd
// Function that runs the region under no-grad and reruns it inside its backward
// (checkpoint/reentrant.h).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/tensor.h"
#include "engine/dispatch/dispatch_mode.h"

namespace remat {

// Errors specific to checkpointing (torch.utils.checkpoint.CheckpointError).
class CheckpointError : public Error {
 public:
  explicit CheckpointError(const std::string& what) : Error(what) {}
};

// The pair of dispatch modes a context_fn returns: forward runs under `forward`, recomputation
// under `recompute` (selective checkpointing's caching and cached modes).
struct CheckpointContexts {
  std::shared_ptr<DispatchMode> forward;
  std::shared_ptr<DispatchMode> recompute;
};

struct CheckpointOptions {
  bool use_reentrant = false;
  bool preserve_rng_state = true;
  std::function<CheckpointContexts()> context_fn;  // empty: vanilla checkpoint
  // "default" (shape, dtype, device), "none", or "checksum" (also a 64-bit checksum of each
  // saved tensor's bytes, compared after recompute; remat only).
  std::string determinism_check = "default";
  bool debug = false;
  std::optional<bool> early_stop;  // unset: true, or the enclosing set_checkpoint_early_stop
};

using CheckpointFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

std::vector<Tensor> checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs,
                               const CheckpointOptions& options = {});
Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input,
                  const CheckpointOptions& options = {});

// Splits fns into `segments` consecutive segments and checkpoints every segment but the last,
// as torch.utils.checkpoint.checkpoint_sequential does.
Tensor checkpoint_sequential(const std::vector<std::function<Tensor(const Tensor&)>>& fns, int64_t segments,
                             const Tensor& input, const CheckpointOptions& options = {});

// RAII: checkpoints called while alive use this early-stop setting (captured at forward time;
// an explicit CheckpointOptions::early_stop overrides it).
class set_checkpoint_early_stop {
 public:
  explicit set_checkpoint_early_stop(bool enable);
  ~set_checkpoint_early_stop();
  set_checkpoint_early_stop(const set_checkpoint_early_stop&) = delete;
  set_checkpoint_early_stop& operator=(const set_checkpoint_early_stop&) = delete;

 private:
  std::optional<bool> previous_;
};

// RAII: overrides CheckpointOptions::debug while alive (nullopt: defer to the option).
class set_checkpoint_debug_enabled {
 public:
  explicit set_checkpoint_debug_enabled(std::optional<bool> enabled);
  ~set_checkpoint_debug_enabled();
  set_checkpoint_debug_enabled(const set_checkpoint_debug_enabled&) = delete;
  set_checkpoint_debug_enabled& operator=(const set_checkpoint_debug_enabled&) = delete;

 private:
  std::optional<bool> previous_;
};

namespace checkpoint_detail {
std::optional<bool> early_stop_override();
std::optional<bool> debug_override();
}  // namespace checkpoint_detail

}  // namespace remat
