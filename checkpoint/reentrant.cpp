// Mirrors torch/utils/checkpoint.py (CheckpointFunction.forward / .backward).
#include "checkpoint/reentrant.h"

#include "checkpoint/device_state.h"
#include "checkpoint/frame.h"
#include "checkpoint/stats_detail.h"
#include "checkpoint/trace.h"
#include "engine/autograd/autograd.h"
#include "engine/autograd/engine.h"
#include "engine/autograd/grad_mode.h"
#include "ops/functions.h"

namespace remat::checkpoint_detail {

using autograd::AutogradContext;

std::vector<Tensor> CheckpointFunction::forward(AutogradContext* ctx, CheckpointFn fn, bool preserve_rng_state,
                                                const std::vector<Tensor>& inputs) {
  ctx->saved_objects["fn"] = fn;
  ctx->saved_objects["state"] = CapturedDeviceState::capture(inputs, preserve_rng_state);
  ctx->save_for_backward(inputs);
  const int64_t region = new_region_id();
  ctx->saved_objects["region"] = region;
  trace::emit("checkpoint #" + std::to_string(region) + " (reentrant): forward under no-grad, " +
              std::to_string(inputs.size()) + " inputs saved");
  return fn(inputs);  // Function::apply runs forward under no-grad
}

std::vector<Tensor> CheckpointFunction::backward(AutogradContext* ctx, std::vector<Tensor> grads) {
  if (!autograd::Engine::is_checkpoint_valid()) {
    throw CheckpointError(
        "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an `inputs` "
        "parameter to .backward(). To resolve this error, you can either set use_reentrant=False, or call "
        ".backward() without passing the `inputs` argument.");
  }
  std::vector<Tensor> inputs = ctx->get_saved_variables();
  const auto& fn = std::any_cast<const CheckpointFn&>(ctx->saved_objects.at("fn"));
  const auto& state = std::any_cast<const CapturedDeviceState&>(ctx->saved_objects.at("state"));

  // detach_variable: same data, no history, same requires_grad.
  std::vector<Tensor> detached;
  for (const Tensor& t : inputs) {
    if (!t.defined()) {
      detached.emplace_back();
      continue;
    }
    Tensor d = detach(t);
    d.requires_grad_(t.requires_grad());
    detached.push_back(d);
  }
  const int64_t region = std::any_cast<int64_t>(ctx->saved_objects.at("region"));
  trace::emit("checkpoint #" + std::to_string(region) + " (reentrant): backward reruns the region with grad on");
  stats_detail::Update(region)->recomputations += 1;
  std::vector<Tensor> outputs;
  {
    RestoreDeviceStateGuard restore(state);  // fork_rng + the forward's autocast state
    autograd::EnableGradGuard enable_grad;
    MemoryPhaseGuard phase(MemoryPhase::Recompute);
    DispatchModeGuard count(stats_detail::make_recompute_accounting_mode(region));  // the rerun's ops and FLOPs
    outputs = fn(detached);
  }

  std::vector<Tensor> outputs_with_grad, grads_with;
  for (size_t i = 0; i < outputs.size() && i < grads.size(); ++i) {
    if (outputs[i].defined() && outputs[i].requires_grad()) {
      outputs_with_grad.push_back(outputs[i]);
      grads_with.push_back(grads[i]);
    }
  }
  if (outputs_with_grad.empty()) {
    throw CheckpointError("none of output has requires_grad=True, this checkpoint() is not necessary");
  }
  autograd::backward(outputs_with_grad, grads_with);  // the reentrant backward
  std::vector<Tensor> result;
  for (const Tensor& d : detached) result.push_back(d.defined() ? d.grad() : Tensor());
  return result;
}

}  // namespace remat::checkpoint_detail
