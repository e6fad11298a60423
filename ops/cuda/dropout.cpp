// Mirrors ATen/native/cuda/Dropout.cu registration: native_dropout (mask and scaled output in one
// kernel) and native_dropout_backward on CUDA, from their Defs (ops/dropout_defs.h: the meta
// function, and the temporaries the Meta kernel imitating CUDA makes too). The mask is
// the CPU's bit for bit: element i is kept iff its Philox uniform (engine/core/generator.h's
// rule, one offset reserved per call) is below 1 - p. dropout itself is a composite.
#include "engine/core/generator.h"
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/pointwise.h"
#include "kernels/cuda/random.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/dropout_defs.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// The Defs' CUDA kernels (TORCH_IMPL_FUNC): the outputs have the meta function's geometry.
// native_dropout runs on empty outputs too (the Def's runs_on_empty): one offset per call.
void native_dropout_cuda(const char* op, const Tensor& out, const Tensor& mask, const Tensor& input, double p,
                         Generator* generator) {
  const DropoutDraw d = dropout_draw<CUDACopies>(input, generator);
  if (input.numel() == 0) return;
  kc::dropout(input.dtype(), d.x.data_ptr(), out.data_ptr(), static_cast<bool*>(mask.data_ptr()), input.numel(),
              d.seed, d.offset, p, keep_scale(p), cuda_stream(input.device()));
}

// grad_input = grad_output * mask * scale, both read strided
void native_dropout_backward_cuda(const char*, const Tensor& grad_input, const Tensor& grad_output, const Tensor& mask,
                                  double scale) {
  const DropoutBackwardTemporaries r = dropout_backward_temporaries<CUDACopies, kCUDA>(grad_output, mask);
  kc::mask_scale(grad_output.dtype(), cuda_loop(grad_input, {&grad_output, &mask}), grad_input.data_ptr(),
                 grad_output.data_ptr(), static_cast<const bool*>(mask.data_ptr()), scale,
                 cuda_stream(grad_output.device()));
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  using structured::CUDABackend;
  using structured::impl;
  impl<structured_native_dropout, CUDABackend, &native_dropout_cuda>(m);
  impl<structured_native_dropout_backward, CUDABackend, &native_dropout_backward_cuda>(m);
}

}  // namespace remat::ops
