// Mirrors ATen/native/cuda/Loss.cu registration: cross_entropy (mean reduction, class-index
// targets) and cross_entropy_backward on CUDA as one fused kernel each, for the schemas of
// ops/native_functions.cpp. Logits are [N, C] with targets [N], or [C] with a 0-d target.
// Targets outside [0, C) throw after the kernel (one read-back of a device flag).
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/loss.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

struct CrossEntropyShape {
  int64_t n, c;
};

CrossEntropyShape cross_entropy_meta(const char* op, const Tensor& logits, const Tensor& targets) {
  check_defined(op, logits, "self");
  check_defined(op, targets, "target");
  check_floating(op, logits, "self");
  REMAT_CHECK(targets.dtype() == kLong, op, ": expected target of dtype Long (class indices), but got ",
              toString(targets.dtype()));
  common_device(op, {&logits, &targets});
  REMAT_CHECK(logits.dim() == 1 || logits.dim() == 2, op, ": expected logits of shape [N, C] or [C], but got ",
              logits.sizes());
  if (logits.dim() == 2) {
    REMAT_CHECK(targets.dim() == 1 && targets.sizes()[0] == logits.sizes()[0], op, ": Expected input batch_size (",
                logits.sizes()[0], ") to match target batch_size (", targets.dim() == 1 ? targets.sizes()[0] : -1,
                "); target of shape ", targets.sizes());
    return {logits.sizes()[0], logits.sizes()[1]};
  }
  REMAT_CHECK(targets.dim() == 0, op, ": a 1-D input (one sample) takes a 0-D target, but got target of shape ",
              targets.sizes());
  return {1, logits.sizes()[0]};
}

std::string target_error(const char* op, int64_t c) {
  return detail::str(op, ": Target out of bounds: every target must be in [0, ", c, ")");
}

Tensor cross_entropy_cuda(const Tensor& logits, const Tensor& targets) {
  const char* op = "aten::cross_entropy";
  CrossEntropyShape s = cross_entropy_meta(op, logits, targets);
  cuda::CUDAGuard guard(logits.device());
  Tensor x = contiguous_cuda(logits), t = contiguous_cuda(targets);
  Tensor loss = make_empty({}, logits.dtype(), logits.device());
  Tensor ws = cuda_workspace(std::max<size_t>(kc::cross_entropy_workspace_bytes(logits.dtype(), s.n), 8),
                             logits.device());
  CUDAIndexError error(logits.device());
  kc::cross_entropy_forward(logits.dtype(), x.data_ptr(), static_cast<const int64_t*>(t.data_ptr()), loss.data_ptr(),
                            s.n, s.c, ws.data_ptr(), error.get(), cuda_stream(logits.device()));
  error.throw_if_set(target_error(op, s.c));
  return loss;
}

Tensor cross_entropy_backward_cuda(const Tensor& grad_output, const Tensor& logits, const Tensor& targets) {
  const char* op = "aten::cross_entropy_backward";
  CrossEntropyShape s = cross_entropy_meta(op, logits, targets);
  check_defined(op, grad_output, "grad_output");
  common_device(op, {&grad_output, &logits});
  REMAT_CHECK(grad_output.numel() == 1, op, ": expected a one-element grad_output (the loss is a scalar), but got ",
              grad_output.sizes());
  cuda::CUDAGuard guard(logits.device());
  Tensor g = contiguous_cuda(cast_cuda(grad_output, logits.dtype()));
  Tensor x = contiguous_cuda(logits), t = contiguous_cuda(targets);
  Tensor out = make_empty(logits.sizes(), logits.dtype(), logits.device());
  if (out.numel() == 0) return out;
  CUDAIndexError error(logits.device());
  kc::cross_entropy_backward(logits.dtype(), g.data_ptr(), x.data_ptr(), static_cast<const int64_t*>(t.data_ptr()),
                             out.data_ptr(), s.n, s.c, error.get(), cuda_stream(logits.device()));
  error.throw_if_set(target_error(op, s.c));
  return out;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("cross_entropy", REMAT_FN(cross_entropy_cuda));
  m.impl("cross_entropy_backward", REMAT_FN(cross_entropy_backward_cuda));
}

}  // namespace remat::ops
