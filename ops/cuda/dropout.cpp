// Mirrors ATen/native/cuda/Dropout.cu registration: native_dropout (mask and scaled output in one
// kernel) and native_dropout_backward on CUDA, with ops/dropout.cpp's meta functions. The mask is
// the CPU's bit for bit: element i is kept iff its Philox uniform (engine/core/generator.h's
// rule, one offset reserved per call) is below 1 - p. dropout itself is a composite.
#include "engine/core/generator.h"
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/pointwise.h"
#include "kernels/cuda/random.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

std::tuple<Tensor, Tensor> native_dropout_cuda(const Tensor& input, double p, Generator* generator) {
  native_dropout_meta(input, p);
  Generator& gen = generator != nullptr ? *generator : default_generator(input.device());
  const uint64_t offset = gen.reserve();  // one offset per call, even when nothing is drawn
  const uint64_t seed = gen.seed();
  cuda::CUDAGuard guard(input.device());
  Tensor mask = make_empty(input.sizes(), kBool, input.device());
  Tensor out = make_empty(input.sizes(), input.dtype(), input.device());
  if (input.numel() == 0) return {out, mask};
  Tensor x = contiguous_cuda(input);
  kc::dropout(input.dtype(), x.data_ptr(), out.data_ptr(), static_cast<bool*>(mask.data_ptr()), input.numel(), seed,
              offset, p, keep_scale(p), cuda_stream(input.device()));
  return {out, mask};
}

// grad_input = grad_output * mask * scale
Tensor native_dropout_backward_cuda(const Tensor& grad_output, const Tensor& mask, double scale) {
  native_dropout_backward_meta(grad_output, mask);
  cuda::CUDAGuard guard(grad_output.device());
  Tensor grad_input = make_empty(grad_output.sizes(), grad_output.dtype(), grad_output.device());
  if (grad_input.numel() == 0) return grad_input;
  kc::mask_scale(grad_output.dtype(), cuda_loop(grad_input, {&grad_output, &mask}), grad_input.data_ptr(),
                 grad_output.data_ptr(), static_cast<const bool*>(mask.data_ptr()), scale,
                 cuda_stream(grad_output.device()));
  return grad_input;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("native_dropout", REMAT_FN(native_dropout_cuda));
  m.impl("native_dropout_backward", REMAT_FN(native_dropout_backward_cuda));
}

}  // namespace remat::ops
