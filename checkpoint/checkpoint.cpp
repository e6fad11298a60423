// Mirrors torch/utils/checkpoint.py (checkpoint, _checkpoint_impl, checkpoint_sequential,
// set_checkpoint_early_stop, set_checkpoint_debug_enabled).
#include "checkpoint/checkpoint.h"

#include "checkpoint/frame.h"
#include "checkpoint/non_reentrant.h"
#include "checkpoint/reentrant.h"

namespace remat {

namespace {
thread_local std::optional<bool> tls_early_stop;
thread_local std::optional<bool> tls_debug;
}  // namespace

namespace checkpoint_detail {
std::optional<bool> early_stop_override() { return tls_early_stop; }
std::optional<bool> debug_override() { return tls_debug; }
}  // namespace checkpoint_detail

set_checkpoint_early_stop::set_checkpoint_early_stop(bool enable) : previous_(tls_early_stop) { tls_early_stop = enable; }
set_checkpoint_early_stop::~set_checkpoint_early_stop() { tls_early_stop = previous_; }

set_checkpoint_debug_enabled::set_checkpoint_debug_enabled(std::optional<bool> enabled) : previous_(tls_debug) {
  tls_debug = enabled;
}
set_checkpoint_debug_enabled::~set_checkpoint_debug_enabled() { tls_debug = previous_; }

std::vector<Tensor> checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs,
                               const CheckpointOptions& options) {
  REMAT_CHECK(static_cast<bool>(fn), "checkpoint: the function to checkpoint is empty");
  if (options.use_reentrant) {
    if (options.context_fn || options.debug) {
      throw CheckpointError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.");
    }
    checkpoint_detail::parse_determinism_check(options.determinism_check);
    return checkpoint_detail::CheckpointFunction::apply(fn, options.preserve_rng_state, inputs);
  }
  return checkpoint_detail::checkpoint_without_reentrant(fn, inputs, options);
}

Tensor checkpoint(const std::function<Tensor(const Tensor&)>& fn, const Tensor& input, const CheckpointOptions& options) {
  REMAT_CHECK(static_cast<bool>(fn), "checkpoint: the function to checkpoint is empty");
  CheckpointFn wrapped = [fn](const std::vector<Tensor>& xs) { return std::vector<Tensor>{fn(xs[0])}; };
  return checkpoint(wrapped, std::vector<Tensor>{input}, options)[0];
}

Tensor checkpoint_sequential(const std::vector<std::function<Tensor(const Tensor&)>>& fns, int64_t segments,
                             const Tensor& input, const CheckpointOptions& options) {
  const int64_t n = static_cast<int64_t>(fns.size());
  REMAT_CHECK(segments >= 1 && segments <= n, "checkpoint_sequential: segments must be between 1 and the number of "
              "functions (", n, "), got ", segments);
  // The segments run again in backward, after this call has returned: they hold the functions
  // themselves (a list made in the call's argument would be gone by then).
  auto held = std::make_shared<const std::vector<std::function<Tensor(const Tensor&)>>>(fns);
  auto run_range = [held](int64_t start, int64_t end) {  // [start, end] inclusive, as in PyTorch
    return [held, start, end](const Tensor& x) {
      Tensor h = x;
      for (int64_t j = start; j <= end; ++j) h = (*held)[static_cast<size_t>(j)](h);
      return h;
    };
  };
  const int64_t segment_size = n / segments;
  int64_t end = -1;
  Tensor h = input;
  // Every segment but the last is checkpointed; the last runs normally.
  for (int64_t start = 0; start < segment_size * (segments - 1); start += segment_size) {
    end = start + segment_size - 1;
    h = checkpoint(std::function<Tensor(const Tensor&)>(run_range(start, end)), h, options);
  }
  return run_range(end + 1, n - 1)(h);
}

}  // namespace remat
