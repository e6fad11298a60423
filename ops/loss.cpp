// Mirrors ATen/native/Loss.cpp (cross_entropy -> log_softmax + nll_loss), fused into one forward
// and one backward kernel (kernels/cpu/loss.h): class-index targets, mean reduction. The forward
// saves nothing but its inputs; the backward recomputes the softmax from the logits.
#include "kernels/cpu/loss.h"

#include <cmath>

#include "engine/dispatch/library.h"
#include "kernels/cpu/embedding.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/cuda_temporaries.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace remat::ops {

// Meta functions, shared by every backend (declared in ops/meta.h).

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

namespace {

namespace cpu = kernels::cpu;

void check_target_range(const char* op, const Tensor& targets, int64_t C) {
  const int64_t* t = targets.data_ptr<int64_t>();
  int64_t bad = cpu::first_index_out_of_range(t, targets.numel(), C);
  REMAT_CHECK(bad < 0, op, ": Target ", bad < 0 ? 0 : t[bad], " is out of bounds (at position ", bad,
              "; classes are 0 to ", C - 1, ").");
}

Tensor cross_entropy_cpu(const Tensor& logits, const Tensor& targets) {
  const char* op = "aten::cross_entropy";
  Device device = check_cross_entropy_args(op, logits, targets);
  const int64_t N = logits.sizes()[0], C = logits.sizes()[1];
  Tensor t = contiguous_cpu(targets);
  check_target_range(op, t, C);
  Tensor x = contiguous_cpu(logits);
  Tensor loss = make_empty({}, logits.dtype(), device);
  REMAT_DISPATCH_FLOATING_TYPES(logits.dtype(), op, [&] {
    double value = cpu::cross_entropy_forward<scalar_t>(x.data_ptr<scalar_t>(), t.data_ptr<int64_t>(), N, C);
    *loss.data_ptr<scalar_t>() = scalar_t(value);
  });
  return loss;
}

Tensor cross_entropy_meta(const Tensor& logits, const Tensor& targets) {
  check_cross_entropy_args("aten::cross_entropy", logits, targets);
  if (cuda_temporaries::imitating()) return cuda_temporaries::cross_entropy(logits, targets);
  return make_empty({}, logits.dtype(), Device{kMeta});
}

Tensor cross_entropy_backward_cpu(const Tensor& grad_output, const Tensor& logits, const Tensor& targets) {
  const char* op = "aten::cross_entropy_backward";
  Device device = check_cross_entropy_args(op, logits, targets);
  check_grad_loss(op, grad_output, logits);
  const int64_t N = logits.sizes()[0], C = logits.sizes()[1];
  Tensor t = contiguous_cpu(targets);
  check_target_range(op, t, C);
  Tensor x = contiguous_cpu(logits);
  // Read in place: a converted copy would be one more allocation than a Meta dry run makes.
  double grad_loss = 0;
  REMAT_DISPATCH_FLOATING_TYPES(grad_output.dtype(), op, [&] { grad_loss = static_cast<double>(*grad_output.data_ptr<scalar_t>()); });
  Tensor grad_logits = make_empty(logits.sizes(), logits.dtype(), device);
  if (grad_logits.numel() == 0) return grad_logits;
  REMAT_DISPATCH_FLOATING_TYPES(logits.dtype(), op, [&] {
    cpu::cross_entropy_backward<scalar_t>(grad_logits.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),
                                          t.data_ptr<int64_t>(), grad_loss, N, C);
  });
  return grad_logits;
}

Tensor cross_entropy_backward_meta(const Tensor& grad_output, const Tensor& logits, const Tensor& targets) {
  check_cross_entropy_args("aten::cross_entropy_backward", logits, targets);
  check_grad_loss("aten::cross_entropy_backward", grad_output, logits);
  Tensor grad_logits = make_empty(logits.sizes(), logits.dtype(), Device{kMeta});
  if (cuda_temporaries::imitating()) cuda_temporaries::cross_entropy_backward(grad_output, logits, targets);
  return grad_logits;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("cross_entropy", REMAT_FN(cross_entropy_cpu));
  m.impl("cross_entropy_backward", REMAT_FN(cross_entropy_backward_cpu));
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("cross_entropy", REMAT_FN(cross_entropy_meta));
  m.impl("cross_entropy_backward", REMAT_FN(cross_entropy_backward_meta));
}

}  // namespace remat::ops
