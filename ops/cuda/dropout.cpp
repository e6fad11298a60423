// Mirrors ATen/native/cuda/Dropout.cu registration: native_dropout (mask and scaled output in
// one kernel) and native_dropout_backward on CUDA, for the schemas of
// ops/native_functions.cpp. The mask is the CPU's bit for bit: element i is kept iff its Philox
// uniform (engine/core/generator.h's rule, one offset reserved per call) is below 1 - p.
// dropout itself is a composite over these.
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
  const char* op = "aten::native_dropout";
  check_defined(op, input, "input");
  check_floating(op, input, "input");
  REMAT_CHECK(p >= 0.0 && p <= 1.0, op, ": dropout probability has to be between 0 and 1, but got ", p);
  Generator& gen = generator != nullptr ? *generator : default_generator(input.device());
  const uint64_t offset = gen.reserve();
  const uint64_t seed = gen.seed();
  cuda::CUDAGuard guard(input.device());
  Tensor x = contiguous_cuda(input);
  Tensor out = make_empty(input.sizes(), input.dtype(), input.device());
  Tensor mask = make_empty(input.sizes(), kBool, input.device());
  const double scale = p >= 1.0 ? 0.0 : 1.0 / (1.0 - p);
  kc::dropout(input.dtype(), x.data_ptr(), out.data_ptr(), static_cast<bool*>(mask.data_ptr()), input.numel(), seed,
              offset, p, scale, cuda_stream(input.device()));
  return {out, mask};
}

// grad_input = grad_output * mask * scale
Tensor native_dropout_backward_cuda(const Tensor& grad, const Tensor& mask, double scale) {
  const char* op = "aten::native_dropout_backward";
  check_defined(op, grad, "grad_output");
  check_defined(op, mask, "mask");
  check_floating(op, grad, "grad_output");
  check_bool_mask(op, mask);
  Device device = common_device(op, {&grad, &mask});
  REMAT_CHECK(broadcast_shapes(op, grad.sizes(), mask.sizes()) == grad.sizes(), op, ": mask of shape ", mask.sizes(),
              " does not broadcast to grad_output's shape ", grad.sizes());
  cuda::CUDAGuard guard(device);
  Tensor out = make_empty(grad.sizes(), grad.dtype(), device);
  if (out.numel() == 0) return out;
  kc::mask_scale(grad.dtype(), cuda_loop(out, {&grad, &mask}), out.data_ptr(), grad.data_ptr(),
                 static_cast<const bool*>(mask.data_ptr()), scale, cuda_stream(device));
  return out;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("native_dropout", REMAT_FN(native_dropout_cuda));
  m.impl("native_dropout_backward", REMAT_FN(native_dropout_backward_cuda));
}

}  // namespace remat::ops
