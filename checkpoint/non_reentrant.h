// Mirrors torch/utils/checkpoint.py's _checkpoint_without_reentrant_generator: the
// non-reentrant checkpoint (use_reentrant = false), which runs the region under a
// CheckpointFrame's hooks (checkpoint/frame.h) and the forward context of options.context_fn.
#pragma once

#include <vector>

#include "checkpoint/checkpoint.h"

namespace remat::checkpoint_detail {

// The non-reentrant checkpoint: runs fn under the frame's hooks (and the forward context).
std::vector<Tensor> checkpoint_without_reentrant(const CheckpointFn& fn, const std::vector<Tensor>& inputs,
                                                 const CheckpointOptions& options);

}  // namespace remat::checkpoint_detail
