// Mirrors ATen/native/SoftMax.cpp: softmax, log_softmax and their backward kernels
// (_softmax_backward_data, _log_softmax_backward_data) over any dim. The loops are in
// kernels/cpu/softmax.h; a strided input is made contiguous first.
#include "kernels/cpu/softmax.h"

#include "engine/dispatch/library.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace remat::ops {

// Meta functions, shared by every backend (declared in ops/meta.h).

SoftmaxGeometry softmax_geometry(const Shape& sizes, int64_t dim) {
  SoftmaxGeometry g;
  if (sizes.empty()) return g;
  g.outer = prod(sizes, 0, static_cast<size_t>(dim));
  g.dim_size = sizes[static_cast<size_t>(dim)];
  g.inner = prod(sizes, static_cast<size_t>(dim) + 1, sizes.size());
  return g;
}

TensorMeta softmax_meta(const char* op, const Tensor& self, int64_t dim) {
  check_defined(op, self, "self");
  check_floating(op, self, "self");
  maybe_wrap_dim(dim, self.dim(), op);
  return {self.sizes(), self.dtype(), self.device()};
}

// grad_output and output: one shape, one floating dtype, one device.
TensorMeta softmax_backward_meta(const char* op, const Tensor& grad_output, const Tensor& output, int64_t dim) {
  check_defined(op, grad_output, "grad_output");
  check_defined(op, output, "output");
  check_floating(op, grad_output, "grad_output");
  Device device = common_device(op, {&grad_output, &output});
  REMAT_CHECK(grad_output.sizes() == output.sizes(), op, ": grad_output of shape ", grad_output.sizes(),
              " does not match output of shape ", output.sizes());
  check_same_dtype(op, grad_output, output);
  maybe_wrap_dim(dim, output.dim(), op);
  return {output.sizes(), output.dtype(), device};
}

namespace {

namespace cpu = kernels::cpu;

Tensor meta_out(TensorMeta m) {
  m.device = Device{kMeta};
  return empty_from(m);
}

Tensor softmax_forward_cpu(const char* op, const Tensor& self, int64_t dim, bool log) {
  Tensor out = empty_from(softmax_meta(op, self, dim));
  if (out.numel() == 0) return out;
  SoftmaxGeometry g = softmax_geometry(self.sizes(), maybe_wrap_dim(dim, self.dim(), op));
  Tensor in = contiguous_cpu(self);
  REMAT_DISPATCH_FLOATING_TYPES(self.dtype(), op, [&] {
    cpu::softmax_forward(out.data_ptr<scalar_t>(), in.data_ptr<scalar_t>(), g.outer, g.dim_size, g.inner, log);
  });
  return out;
}

Tensor softmax_cpu(const Tensor& self, int64_t dim) { return softmax_forward_cpu("aten::softmax", self, dim, false); }
Tensor log_softmax_cpu(const Tensor& self, int64_t dim) {
  return softmax_forward_cpu("aten::log_softmax", self, dim, true);
}
Tensor softmax_meta_kernel(const Tensor& self, int64_t dim) {
  return meta_out(softmax_meta("aten::softmax", self, dim));
}
Tensor log_softmax_meta_kernel(const Tensor& self, int64_t dim) {
  return meta_out(softmax_meta("aten::log_softmax", self, dim));
}

Tensor softmax_backward_cpu(const char* op, const Tensor& grad_output, const Tensor& output, int64_t dim, bool log) {
  Tensor grad_input = empty_from(softmax_backward_meta(op, grad_output, output, dim));
  if (grad_input.numel() == 0) return grad_input;
  SoftmaxGeometry g = softmax_geometry(output.sizes(), maybe_wrap_dim(dim, output.dim(), op));
  Tensor dy = contiguous_cpu(grad_output), y = contiguous_cpu(output);
  REMAT_DISPATCH_FLOATING_TYPES(output.dtype(), op, [&] {
    cpu::softmax_backward(grad_input.data_ptr<scalar_t>(), dy.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), g.outer,
                          g.dim_size, g.inner, log);
  });
  return grad_input;
}

Tensor softmax_backward_data_cpu(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  return softmax_backward_cpu("aten::_softmax_backward_data", grad_output, output, dim, false);
}
Tensor log_softmax_backward_data_cpu(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  return softmax_backward_cpu("aten::_log_softmax_backward_data", grad_output, output, dim, true);
}
Tensor softmax_backward_data_meta(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  return meta_out(softmax_backward_meta("aten::_softmax_backward_data", grad_output, output, dim));
}
Tensor log_softmax_backward_data_meta(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  return meta_out(softmax_backward_meta("aten::_log_softmax_backward_data", grad_output, output, dim));
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("softmax", REMAT_FN(softmax_cpu));
  m.impl("log_softmax", REMAT_FN(log_softmax_cpu));
  m.impl("_softmax_backward_data", REMAT_FN(softmax_backward_data_cpu));
  m.impl("_log_softmax_backward_data", REMAT_FN(log_softmax_backward_data_cpu));
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("softmax", REMAT_FN(softmax_meta_kernel));
  m.impl("log_softmax", REMAT_FN(log_softmax_meta_kernel));
  m.impl("_softmax_backward_data", REMAT_FN(softmax_backward_data_meta));
  m.impl("_log_softmax_backward_data", REMAT_FN(log_softmax_backward_data_meta));
}

}  // namespace remat::ops
