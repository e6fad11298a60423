// Mirrors ATen/native/Loss.cpp (cross_entropy -> log_softmax + nll_loss), fused into one forward
// and one backward kernel (kernels/cpu/loss.h): class-index targets, mean reduction. The forward
// saves nothing but its inputs; the backward recomputes the softmax from the logits. The ops are
// structured (ops/loss_defs.h): their meta functions, CPU kernels and Meta kernels are here.
#include "kernels/cpu/loss.h"

#include "engine/dispatch/library.h"
#include "kernels/cpu/embedding.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/cuda_temporaries.h"
#include "ops/loss_defs.h"
#include "ops/meta.h"
#include "ops/meta_copies.h"
#include "ops/op_utils.h"
#include "ops/structured.h"

namespace remat::ops {

namespace {

namespace cpu = kernels::cpu;

// logits [N, C] floating, targets Long [N]; returns the device.
Device check_cross_entropy_args(const char* op, const Tensor& logits, const Tensor& targets) {
  check_defined(op, logits, "self");
  check_defined(op, targets, "target");
  check_floating(op, logits, "self");
  Device device = common_device(op, {&logits, &targets});
  REMAT_CHECK(logits.dim() == 2, op, ": expected input of shape [N, C] (a 2-D tensor of logits), but got a ",
              logits.dim(), "-D tensor of shape ", logits.sizes());
  REMAT_CHECK(targets.dtype() == kLong, op, ": expected scalar type Long but found ", toString(targets.dtype()),
              " (target class indices)");
  REMAT_CHECK(targets.dim() == 1, op, ": expected target of shape [N] (a 1-D tensor of class indices), but got a ",
              targets.dim(), "-D tensor of shape ", targets.sizes());
  REMAT_CHECK(logits.sizes()[0] == targets.sizes()[0], op, ": Expected input batch_size (", logits.sizes()[0],
              ") to match target batch_size (", targets.sizes()[0], ").");
  return device;
}

void check_grad_loss(const char* op, const Tensor& grad_output, const Tensor& logits) {
  check_defined(op, grad_output, "grad_output");
  common_device(op, {&grad_output, &logits});
  check_floating(op, grad_output, "grad_output");
  REMAT_CHECK(grad_output.numel() == 1, op, ": Expected a single element grad_output tensor, but got shape ",
              grad_output.sizes());
}

}  // namespace

// The Defs' meta functions (ops/loss_defs.h), shared by every backend (declared in ops/meta.h).

TensorMeta cross_entropy_meta(const char* op, const Tensor& logits, const Tensor& targets) {
  const Device device = check_cross_entropy_args(op, logits, targets);
  return {{}, logits.dtype(), device};
}

TensorMeta cross_entropy_backward_meta(const char* op, const Tensor& grad_output, const Tensor& logits,
                                       const Tensor& targets) {
  const Device device = check_cross_entropy_args(op, logits, targets);
  check_grad_loss(op, grad_output, logits);
  return {logits.sizes(), logits.dtype(), device};
}

namespace {

void check_target_range(const char* op, const Tensor& targets, int64_t C) {
  const int64_t* t = targets.data_ptr<int64_t>();
  int64_t bad = cpu::first_index_out_of_range(t, targets.numel(), C);
  REMAT_CHECK(bad < 0, op, ": Target ", bad < 0 ? 0 : t[bad], " is out of bounds (at position ", bad,
              "; classes are 0 to ", C - 1, ").");
}

// The Defs' CPU kernels (TORCH_IMPL_FUNC): the output has the meta function's geometry.
void cross_entropy_cpu(const char* op, const Tensor& loss, const Tensor& logits, const Tensor& targets) {
  const int64_t N = logits.sizes()[0], C = logits.sizes()[1];
  const CrossEntropyTemporaries r = cross_entropy_temporaries<CPUCopies, kCPU>(loss, logits, targets);
  check_target_range(op, r.t, C);
  REMAT_DISPATCH_FLOATING_TYPES(logits.dtype(), op, [&] {
    double value = cpu::cross_entropy_forward<scalar_t>(r.x.data_ptr<scalar_t>(), r.t.data_ptr<int64_t>(), N, C);
    *loss.data_ptr<scalar_t>() = scalar_t(value);
  });
}

// Runs on an empty gradient too (the Def's runs_on_empty): the targets are checked first.
void cross_entropy_backward_cpu(const char* op, const Tensor& grad_logits, const Tensor& grad_output,
                                const Tensor& logits, const Tensor& targets) {
  const int64_t N = logits.sizes()[0], C = logits.sizes()[1];
  const CrossEntropyBackwardTemporaries r =
      cross_entropy_backward_temporaries<CPUCopies, kCPU>(grad_logits, grad_output, logits, targets);
  check_target_range(op, r.t, C);
  if (grad_logits.numel() == 0) return;
  double grad_loss = 0;
  REMAT_DISPATCH_FLOATING_TYPES(grad_output.dtype(), op,
                                [&] { grad_loss = static_cast<double>(*grad_output.data_ptr<scalar_t>()); });
  REMAT_DISPATCH_FLOATING_TYPES(logits.dtype(), op, [&] {
    cpu::cross_entropy_backward<scalar_t>(grad_logits.data_ptr<scalar_t>(), r.x.data_ptr<scalar_t>(),
                                          r.t.data_ptr<int64_t>(), grad_loss, N, C);
  });
}

// The Meta kernels' temporaries (structured::impl_meta): those of the backend the dry run counts
// like, from the templates its kernel runs.
void cross_entropy_meta_temporaries(const Tensor& loss, const Tensor& logits, const Tensor& targets) {
  if (cuda_temporaries::imitating()) cross_entropy_temporaries<MetaCopies, kCUDA>(loss, logits, targets);
  else cross_entropy_temporaries<MetaCopies, kCPU>(loss, logits, targets);
}
void cross_entropy_backward_meta_temporaries(const Tensor& grad_logits, const Tensor& grad_output,
                                             const Tensor& logits, const Tensor& targets) {
  if (cuda_temporaries::imitating())
    cross_entropy_backward_temporaries<MetaCopies, kCUDA>(grad_logits, grad_output, logits, targets);
  else cross_entropy_backward_temporaries<MetaCopies, kCPU>(grad_logits, grad_output, logits, targets);
}

}  // namespace

// The schemas, the CPU and the Meta kernels, from the Defs (ops/loss_defs.h).
REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_loss_def([&](auto def) { structured::define<typename decltype(def)::type>(m, {}); });
}
REMAT_LIBRARY_IMPL(aten, CPU, m) {
  using structured::CPUBackend;
  using structured::impl;
  impl<structured_cross_entropy, CPUBackend, &cross_entropy_cpu>(m);
  impl<structured_cross_entropy_backward, CPUBackend, &cross_entropy_backward_cpu>(m);
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  structured::impl_meta<structured_cross_entropy, &cross_entropy_meta_temporaries>(m);
  structured::impl_meta<structured_cross_entropy_backward, &cross_entropy_backward_meta_temporaries>(m);
}

}  // namespace remat::ops
