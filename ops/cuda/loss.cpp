// Mirrors ATen/native/cuda/Loss.cu registration: cross_entropy (class-index targets, mean
// reduction) and cross_entropy_backward on CUDA as one fused kernel each, from their Defs
// (ops/loss_defs.h: the meta function, and the temporaries the Meta kernel imitating CUDA makes
// too). Targets outside [0, C) throw after the kernel (one read-back of a device flag), naming
// the first offending target and its position as the CPU kernel does.
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/loss.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/loss_defs.h"
#include "ops/meta.h"
#include "ops/structured.h"

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

// The Defs' CUDA kernels (TORCH_IMPL_FUNC): the output has the meta function's geometry.
void cross_entropy_cuda(const char* op, const Tensor& loss, const Tensor& logits, const Tensor& targets) {
  const int64_t N = logits.sizes()[0], C = logits.sizes()[1];
  const Device device = loss.device();
  const CrossEntropyTemporaries r = cross_entropy_temporaries<CUDACopies, kCUDA>(loss, logits, targets);
  CUDAIndexError error(r.flag);
  kc::cross_entropy_forward(logits.dtype(), r.x.data_ptr(), static_cast<const int64_t*>(r.t.data_ptr()),
                            loss.data_ptr(), N, C, r.workspace.data_ptr(), error.get(), cuda_stream(device));
  error.throw_if_set(r.t, target_error(op, C));
}

// Runs on an empty gradient too (the Def's runs_on_empty, for the CPU's check): launches nothing.
void cross_entropy_backward_cuda(const char* op, const Tensor& grad_logits, const Tensor& grad_output,
                                 const Tensor& logits, const Tensor& targets) {
  const int64_t N = logits.sizes()[0], C = logits.sizes()[1];
  const Device device = grad_logits.device();
  const CrossEntropyBackwardTemporaries r =
      cross_entropy_backward_temporaries<CUDACopies, kCUDA>(grad_logits, grad_output, logits, targets);
  if (grad_logits.numel() == 0) return;
  CUDAIndexError error(r.flag);
  kc::cross_entropy_backward(logits.dtype(), r.g.data_ptr(), r.x.data_ptr(),
                             static_cast<const int64_t*>(r.t.data_ptr()), grad_logits.data_ptr(), N, C, error.get(),
                             cuda_stream(device));
  error.throw_if_set(r.t, target_error(op, C));
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  using structured::CUDABackend;
  using structured::impl;
  impl<structured_cross_entropy, CUDABackend, &cross_entropy_cuda>(m);
  impl<structured_cross_entropy_backward, CUDABackend, &cross_entropy_backward_cuda>(m);
}

}  // namespace remat::ops
