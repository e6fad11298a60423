// Mirrors ATen/native/Dropout.cpp (dropout) and the native_dropout / native_dropout_backward
// kernels. The keep mask follows the Philox offset rule of engine/core/generator.h: each
// native_dropout call reserves one offset, and element i (row-major) is kept iff
// U(seed, offset, i) < 1 - p (kernels/cpu/random.h dropout_mask_kernel). Kept values are scaled
// by 1 / (1 - p); p = 1 drops everything (scale 0), p = 0 keeps everything (scale 1).
// native_dropout and its backward are structured (ops/dropout_defs.h): their meta functions, CPU
// kernels and Meta kernels are here.
#include "kernels/cpu/dropout.h"

#include <tuple>

#include "engine/core/generator.h"
#include "engine/dispatch/library.h"
#include "kernels/cpu/random.h"
#include "ops/composite.h"
#include "ops/cpu_utils.h"
#include "ops/cuda_temporaries.h"
#include "ops/dispatch_dtype.h"
#include "ops/dropout_defs.h"
#include "ops/functions.h"
#include "ops/meta.h"
#include "ops/meta_copies.h"
#include "ops/op_utils.h"
#include "ops/structured.h"

namespace remat::ops {

// Meta functions, shared by every backend (declared in ops/meta.h); the Defs' below.

void check_probability(const char* op, double p) {
  REMAT_CHECK(p >= 0.0 && p <= 1.0, op, ": dropout probability has to be between 0 and 1, but got ", p);
}

// What native_dropout's derivative and callers use as the scale of kept elements.
double keep_scale(double p) { return p == 1.0 ? 0.0 : 1.0 / (1.0 - p); }

std::tuple<TensorMeta, TensorMeta> native_dropout_meta(const char* op, const Tensor& input, double p, Generator*) {
  check_defined(op, input, "input");
  check_floating(op, input, "input");
  check_probability(op, p);
  return {{input.sizes(), input.dtype(), input.device()}, {input.sizes(), kBool, input.device()}};
}

TensorMeta native_dropout_backward_meta(const char* op, const Tensor& grad_output, const Tensor& mask, double) {
  check_defined(op, grad_output, "grad_output");
  check_defined(op, mask, "mask");
  check_floating(op, grad_output, "grad_output");
  const Device device = common_device(op, {&grad_output, &mask});
  REMAT_CHECK(mask.dtype() == kBool, op, ": Mask should be Bool Scalar Type, but got ", toString(mask.dtype()));
  REMAT_CHECK(mask.sizes() == grad_output.sizes(), op, ": mask of shape ", mask.sizes(),
              " does not match grad_output of shape ", grad_output.sizes());
  return {grad_output.sizes(), grad_output.dtype(), device};
}

namespace {

namespace cpu = kernels::cpu;

// The Defs' CPU kernels (TORCH_IMPL_FUNC): the outputs have the meta function's geometry.
// native_dropout runs on empty outputs too (the Def's runs_on_empty): one offset per call.
void native_dropout_cpu(const char* op, const Tensor& out, const Tensor& mask, const Tensor& input, double p,
                        Generator* generator) {
  const DropoutDraw d = dropout_draw<CPUCopies>(input, generator);
  const int64_t n = input.numel();
  if (n == 0) return;
  REMAT_DISPATCH_FLOATING_TYPES(input.dtype(), op, [&] {
    cpu::dropout_forward(out.data_ptr<scalar_t>(), mask.data_ptr<bool>(), d.x.data_ptr<scalar_t>(), n, d.seed,
                         d.offset, p, keep_scale(p));
  });
}

void native_dropout_backward_cpu(const char* op, const Tensor& grad_input, const Tensor& grad_output,
                                 const Tensor& mask, double scale) {
  const DropoutBackwardTemporaries r = dropout_backward_temporaries<CPUCopies, kCPU>(grad_output, mask);
  REMAT_DISPATCH_FLOATING_TYPES(grad_output.dtype(), op, [&] {
    cpu::masked_scale(grad_input.data_ptr<scalar_t>(), r.dy.data_ptr<scalar_t>(), r.mask.data_ptr<bool>(),
                      r.dy.numel(), scale);
  });
}

// The Meta kernels' temporaries (structured::impl_meta): those of the backend the dry run counts
// like, from the templates its kernel runs. No values on Meta, but an explicit generator still
// advances, so that offsets match a real run (as uniform_/normal_ on Meta).
void native_dropout_meta_temporaries(const Tensor&, const Tensor&, const Tensor& input, double,
                                     Generator* generator) {
  if (generator != nullptr) generator->reserve();
  const Tensor x = dropout_input<MetaCopies>(input);  // CPU's and CUDA's
}
void native_dropout_backward_meta_temporaries(const Tensor&, const Tensor& grad_output, const Tensor& mask, double) {
  if (cuda_temporaries::imitating()) dropout_backward_temporaries<MetaCopies, kCUDA>(grad_output, mask);
  else dropout_backward_temporaries<MetaCopies, kCPU>(grad_output, mask);
}

// dropout(x, p, train): the identity unless training with p > 0 (the input itself, as PyTorch).
Tensor dropout_composite(const Tensor& input, double p, bool train, Generator* generator) {
  check_probability("aten::dropout", p);
  if (!train || p == 0.0) return input;
  return std::get<0>(native_dropout(input, p, generator));
}

}  // namespace

// The schemas, the CPU and the Meta kernels, from the Defs (ops/dropout_defs.h).
REMAT_LIBRARY_FRAGMENT(aten, m) {
  structured::define<structured_native_dropout>(m, {Tag::nondeterministic_seeded});
  structured::define<structured_native_dropout_backward>(m, {});
}
REMAT_LIBRARY_IMPL(aten, CPU, m) {
  using structured::CPUBackend;
  using structured::impl;
  impl<structured_native_dropout, CPUBackend, &native_dropout_cpu>(m);
  impl<structured_native_dropout_backward, CPUBackend, &native_dropout_backward_cpu>(m);
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  structured::impl_meta<structured_native_dropout, &native_dropout_meta_temporaries>(m);
  structured::impl_meta<structured_native_dropout_backward, &native_dropout_backward_meta_temporaries>(m);
}
REMAT_LIBRARY_FRAGMENT(aten, m) { impl_composite(m, "dropout", REMAT_FN(dropout_composite)); }

}  // namespace remat::ops
