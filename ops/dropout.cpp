// Mirrors ATen/native/Dropout.cpp (dropout) and the native_dropout / native_dropout_backward
// kernels. The keep mask follows the Philox offset rule of engine/core/generator.h: each
// native_dropout call reserves one offset, and element i (row-major) is kept iff
// U(seed, offset, i) < 1 - p (kernels/cpu/random.h dropout_mask_kernel). Kept values are scaled
// by 1 / (1 - p); p = 1 drops everything (scale 0), p = 0 keeps everything (scale 1).
#include "kernels/cpu/dropout.h"

#include <tuple>

#include "engine/core/generator.h"
#include "engine/dispatch/library.h"
#include "kernels/cpu/random.h"
#include "ops/composite.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/functions.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace remat::ops {

// Meta functions, shared by every backend (declared in ops/meta.h).

void check_probability(const char* op, double p) {
  REMAT_CHECK(p >= 0.0 && p <= 1.0, op, ": dropout probability has to be between 0 and 1, but got ", p);
}

// What native_dropout's derivative and callers use as the scale of kept elements.
double keep_scale(double p) { return p == 1.0 ? 0.0 : 1.0 / (1.0 - p); }

void native_dropout_meta(const Tensor& input, double p) {
  check_defined("aten::native_dropout", input, "input");
  check_floating("aten::native_dropout", input, "input");
  check_probability("aten::native_dropout", p);
}

void native_dropout_backward_meta(const Tensor& grad_output, const Tensor& mask) {
  const char* op = "aten::native_dropout_backward";
  check_defined(op, grad_output, "grad_output");
  check_defined(op, mask, "mask");
  check_floating(op, grad_output, "grad_output");
  common_device(op, {&grad_output, &mask});
  REMAT_CHECK(mask.dtype() == kBool, op, ": Mask should be Bool Scalar Type, but got ", toString(mask.dtype()));
  REMAT_CHECK(mask.sizes() == grad_output.sizes(), op, ": mask of shape ", mask.sizes(),
              " does not match grad_output of shape ", grad_output.sizes());
}

namespace {

namespace cpu = kernels::cpu;

std::tuple<Tensor, Tensor> native_dropout_cpu(const Tensor& input, double p, Generator* generator) {
  native_dropout_meta(input, p);
  Generator& gen = generator != nullptr ? *generator : default_generator(input.device());
  const uint64_t offset = gen.reserve();  // one offset per call, even when nothing is drawn
  const uint64_t seed = gen.seed();
  Tensor mask = make_empty(input.sizes(), kBool, input.device());
  Tensor out = make_empty(input.sizes(), input.dtype(), input.device());
  const int64_t n = input.numel();
  if (n == 0) return {out, mask};
  cpu::dropout_mask_kernel(mask.data_ptr<bool>(), n, seed, offset, p);
  Tensor x = contiguous_cpu(input);
  REMAT_DISPATCH_FLOATING_TYPES(input.dtype(), "aten::native_dropout", [&] {
    cpu::masked_scale(out.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(), mask.data_ptr<bool>(), n, keep_scale(p));
  });
  return {out, mask};
}

// No values on Meta; an explicit generator still advances, so offsets match a real run (as
// uniform_/normal_ on Meta).
std::tuple<Tensor, Tensor> native_dropout_meta_kernel(const Tensor& input, double p, Generator* generator) {
  native_dropout_meta(input, p);
  if (generator != nullptr) generator->reserve();
  return {make_empty(input.sizes(), input.dtype(), Device{kMeta}), make_empty(input.sizes(), kBool, Device{kMeta})};
}

Tensor native_dropout_backward_cpu(const Tensor& grad_output, const Tensor& mask, double scale) {
  native_dropout_backward_meta(grad_output, mask);
  Tensor grad_input = make_empty(grad_output.sizes(), grad_output.dtype(), grad_output.device());
  if (grad_input.numel() == 0) return grad_input;
  Tensor dy = contiguous_cpu(grad_output), m = contiguous_cpu(mask);
  REMAT_DISPATCH_FLOATING_TYPES(grad_output.dtype(), "aten::native_dropout_backward", [&] {
    cpu::masked_scale(grad_input.data_ptr<scalar_t>(), dy.data_ptr<scalar_t>(), m.data_ptr<bool>(), dy.numel(), scale);
  });
  return grad_input;
}

Tensor native_dropout_backward_meta_kernel(const Tensor& grad_output, const Tensor& mask, double) {
  native_dropout_backward_meta(grad_output, mask);
  return make_empty(grad_output.sizes(), grad_output.dtype(), Device{kMeta});
}

// dropout(x, p, train): the identity unless training with p > 0 (the input itself, as PyTorch).
Tensor dropout_composite(const Tensor& input, double p, bool train, Generator* generator) {
  check_probability("aten::dropout", p);
  if (!train || p == 0.0) return input;
  return std::get<0>(native_dropout(input, p, generator));
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("native_dropout", REMAT_FN(native_dropout_cpu));
  m.impl("native_dropout_backward", REMAT_FN(native_dropout_backward_cpu));
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("native_dropout", REMAT_FN(native_dropout_meta_kernel));
  m.impl("native_dropout_backward", REMAT_FN(native_dropout_backward_meta_kernel));
}
REMAT_LIBRARY_FRAGMENT(aten, m) { impl_composite(m, "dropout", REMAT_FN(dropout_composite)); }

}  // namespace remat::ops
