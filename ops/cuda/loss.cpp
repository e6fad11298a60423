// Mirrors ATen/native/cuda/Loss.cu registration: cross_entropy (class-index targets, mean
// reduction) and cross_entropy_backward on CUDA as one fused kernel each, with ops/loss.cpp's
// argument checks. Targets outside [0, C) throw after the kernel (one read-back of a device
// flag), naming the first offending target and its position as the CPU kernel does.
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/loss.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// ops/loss.cpp's message for the first target outside [0, C).
std::function<std::string(int64_t, int64_t)> target_error(const char* op, int64_t C) {
  return [op, C](int64_t target, int64_t position) {
    return detail::str(op, ": Target ", target, " is out of bounds (at position ", position, "; classes are 0 to ",
                       C - 1, ").");
  };
}

Tensor cross_entropy_cuda(const Tensor& logits, const Tensor& targets) {
  const char* op = "aten::cross_entropy";
  Device device = check_cross_entropy_args(op, logits, targets);
  const int64_t N = logits.sizes()[0], C = logits.sizes()[1];
  cuda::CUDAGuard guard(device);
  Tensor x = contiguous_cuda(logits), t = contiguous_cuda(targets);
  Tensor loss = make_empty({}, logits.dtype(), device);
  Tensor ws = cuda_workspace(std::max<size_t>(kc::cross_entropy_workspace_bytes(logits.dtype(), N), 8), device);
  CUDAIndexError error(device);
  kc::cross_entropy_forward(logits.dtype(), x.data_ptr(), static_cast<const int64_t*>(t.data_ptr()), loss.data_ptr(),
                            N, C, ws.data_ptr(), error.get(), cuda_stream(device));
  error.throw_if_set(t, target_error(op, C));
  return loss;
}

Tensor cross_entropy_backward_cuda(const Tensor& grad_output, const Tensor& logits, const Tensor& targets) {
  const char* op = "aten::cross_entropy_backward";
  Device device = check_cross_entropy_args(op, logits, targets);
  check_grad_loss(op, grad_output, logits);
  const int64_t N = logits.sizes()[0], C = logits.sizes()[1];
  cuda::CUDAGuard guard(device);
  Tensor grad_logits = make_empty(logits.sizes(), logits.dtype(), device);
  if (grad_logits.numel() == 0) return grad_logits;
  // the upstream gradient in the accumulation dtype (the CPU kernel reads it as a double)
  Tensor g = contiguous_cuda(cast_cuda(grad_output, logits.dtype() == kDouble ? kDouble : kFloat));
  Tensor x = contiguous_cuda(logits), t = contiguous_cuda(targets);
  CUDAIndexError error(device);
  kc::cross_entropy_backward(logits.dtype(), g.data_ptr(), x.data_ptr(), static_cast<const int64_t*>(t.data_ptr()),
                             grad_logits.data_ptr(), N, C, error.get(), cuda_stream(device));
  error.throw_if_set(t, target_error(op, C));
  return grad_logits;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("cross_entropy", REMAT_FN(cross_entropy_cuda));
  m.impl("cross_entropy_backward", REMAT_FN(cross_entropy_backward_cuda));
}

}  // namespace remat::ops
