// Mirrors torch/utils/checkpoint.py's _checkpoint_without_reentrant_generator: the
// non-reentrant checkpoint's driver (debug logs, contexts, the frame's hooks around the region).
#include "checkpoint/non_reentrant.h"

#include "checkpoint/device_state.h"
#include "checkpoint/frame.h"
#include "checkpoint/scope.h"
#include "checkpoint/selective.h"
#include "checkpoint/stats_detail.h"
#include "checkpoint/trace.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/saved_variable_hooks.h"

namespace remat::checkpoint_detail {

namespace {

// debug=True: logs every op (name and input shapes) of the forward and of the latest
// recomputation, to print both when an unpack fails (PyTorch's LoggingTensorMode pair).
class OpLogMode : public DispatchMode {
 public:
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    std::string line = op.name() + "(";
    for (size_t i = 0; i < args.size(); ++i) line += (i ? ", " : "") + args[i].str();
    log.push_back(line + ")");
    return op.call(args);
  }
  std::vector<std::string> log;
};

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) out += "  " + std::to_string(i + 1) + ". " + lines[i] + "\n";
  return out.empty() ? "  (none)\n" : out;
}

}  // namespace

std::vector<Tensor> checkpoint_without_reentrant(const CheckpointFn& fn, const std::vector<Tensor>& inputs,
                                                 const CheckpointOptions& options) {
  DeterminismCheck check = parse_determinism_check(options.determinism_check);
  bool debug = debug_override().value_or(options.debug);

  std::function<CheckpointContexts()> context_fn = options.context_fn;
  CheckpointFrame::UnpackErrorCallback unpack_error_cb;
  if (debug) {
    if (context_fn) throw CheckpointError("torch.utils.checkpoint: debug=True is incompatible with non-default context_fn");
    auto fwd_log = std::make_shared<OpLogMode>();
    auto recompute_log = std::make_shared<OpLogMode>();
    context_fn = [fwd_log, recompute_log] { return CheckpointContexts{fwd_log, recompute_log}; };
    unpack_error_cb = [fwd_log, recompute_log](const CheckpointError& e) {
      throw CheckpointError(
          std::string("An error happened while unpacking tensors; dumping logs of latest computation because you "
                      "passed `debug=True` to `torch.utils.checkpoint.checkpoint()`.\n\nOperations executed during "
                      "the original forward:\n\n") +
          join_lines(fwd_log->log) + "\nOperations executed during recomputation:\n\n" + join_lines(recompute_log->log) +
          "\nERROR: Detected non-determinism while running activation checkpointing\n\n" + e.what());
    };
  }

  CheckpointContexts contexts;
  if (context_fn) contexts = context_fn();
  CapturedDeviceState state = CapturedDeviceState::capture(inputs, options.preserve_rng_state);
  // An explicit option wins over set_checkpoint_early_stop, which wins over the default (true).
  bool early_stop = options.early_stop ? *options.early_stop : early_stop_override().value_or(true);

  std::shared_ptr<DispatchMode> recompute_mode = contexts.recompute;
  bool log_recompute = debug;
  auto accounting = std::make_shared<std::shared_ptr<DispatchMode>>();  // set once the frame has its id
  std::vector<std::string> scope_path = current_scope_names();  // the rerun sees the forward's scopes
  auto frame = std::make_shared<CheckpointFrame>(
      [fn, state, recompute_mode, log_recompute, accounting, scope_path](const std::vector<Tensor>& args) {
        RestoreDeviceStateGuard restore(state);
        std::vector<std::unique_ptr<remat::scope>> scopes;
        for (const std::string& name : scope_path) scopes.push_back(std::make_unique<remat::scope>(name));
        if (log_recompute) static_cast<OpLogMode&>(*recompute_mode).log.clear();
        // Accounting outside, the recompute context (SAC's cached mode) inside: replayed calls
        // never reach the accounting mode, recomputed ones do.
        DispatchModeGuard count(*accounting);
        std::unique_ptr<DispatchModeGuard> mode;
        if (recompute_mode) mode = std::make_unique<DispatchModeGuard>(recompute_mode);
        fn(args);
      },
      early_stop, check, unpack_error_cb);
  *accounting = stats_detail::make_recompute_accounting_mode(frame->id());
  sac_detail::bind_region(contexts, frame->id());
  frame->set_keep_direct(sac_detail::keep_direct_fn(contexts), [contexts] { return sac_detail::forward_calls(contexts); });

  if (!autograd::GradMode::is_enabled()) return fn(inputs);

  frame->save_inputs(inputs);
  if (checkpoint_trace_enabled()) {
    trace::emit("checkpoint #" + std::to_string(frame->id()) + ": forward (non-reentrant, early_stop=" +
                (early_stop ? "true" : "false") + ", " + std::to_string(inputs.size()) + " inputs saved)");
  }
  std::vector<Tensor> outputs;
  {
    autograd::saved_tensors_hooks hooks([frame](const Tensor& x) { return frame->pack(x); },
                                        [frame](const std::any& p) { return frame->unpack(p); });
    std::unique_ptr<DispatchModeGuard> mode;
    if (contexts.forward) mode = std::make_unique<DispatchModeGuard>(contexts.forward);
    outputs = fn(inputs);
  }
  frame->forward_completed = true;
  sac_detail::forward_done(contexts);
  // What SAC keeps for calls a rerun never reaches (or for every call, when backward needs no
  // rerun at all) is dropped now: backward holds what it needs of them itself, as it would
  // without checkpointing, and frees each tensor when the node that saved it has run.
  if (early_stop) sac_detail::release_calls_from(contexts, frame->first_unreachable_sac_call());
  if (checkpoint_trace_enabled()) {
    trace::emit("checkpoint #" + std::to_string(frame->id()) + ": forward done, " + std::to_string(frame->num_dropped()) +
                " saved tensors dropped" +
                (frame->num_dropped() < frame->num_saved()
                     ? ", " + std::to_string(frame->num_saved() - frame->num_dropped()) + " kept as they are"
                     : std::string()));
  }
  return outputs;
}

}  // namespace remat::checkpoint_detail
