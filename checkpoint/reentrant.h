// Mirrors torch/utils/checkpoint.py's CheckpointFunction: the reentrant checkpoint.
//
// forward runs the region under no-grad (nothing inside is recorded), saving the inputs with
// save_for_backward; backward restores the RNG and autocast state, reruns the region on
// detached inputs with grad on, and runs a nested ("reentrant") backward through it.
#pragma once

#include "checkpoint/checkpoint.h"
#include "engine/autograd/custom_function.h"

namespace remat::checkpoint_detail {

struct CheckpointFunction : autograd::Function<CheckpointFunction> {
  static std::vector<Tensor> forward(autograd::AutogradContext* ctx, CheckpointFn fn, bool preserve_rng_state,
                                     const std::vector<Tensor>& inputs);
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> grads);
};

}  // namespace remat::checkpoint_detail
