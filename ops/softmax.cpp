// Mirrors ATen/native/SoftMax.cpp: softmax, log_softmax and their backward kernels
// (_softmax_backward_data, _log_softmax_backward_data) over any dim: their meta functions, their
// CPU kernels, and their schemas and CPU/Meta registrations from their Defs (ops/softmax_defs.h,
// ops/structured.h). The loops are in
// kernels/cpu/softmax.h; a strided input is made contiguous first.
#include "kernels/cpu/softmax.h"

#include "engine/dispatch/library.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/meta.h"
#include "ops/op_utils.h"
#include "ops/softmax_defs.h"
#include "ops/structured.h"

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

// The kernels (TORCH_IMPL_FUNC): out has the meta function's geometry and is not empty.
template <bool kLog>
void softmax_cpu(const char* op, const Tensor& out, const Tensor& self, int64_t dim) {
  SoftmaxGeometry g = softmax_geometry(self.sizes(), maybe_wrap_dim(dim, self.dim(), op));
  Tensor in = contiguous_cpu(self);
  REMAT_DISPATCH_FLOATING_TYPES(self.dtype(), op, [&] {
    cpu::softmax_forward(out.data_ptr<scalar_t>(), in.data_ptr<scalar_t>(), g.outer, g.dim_size, g.inner, kLog);
  });
}

template <bool kLog>
void softmax_backward_cpu(const char* op, const Tensor& grad_input, const Tensor& grad_output, const Tensor& output,
                          int64_t dim) {
  SoftmaxGeometry g = softmax_geometry(output.sizes(), maybe_wrap_dim(dim, output.dim(), op));
  Tensor dy = contiguous_cpu(grad_output), y = contiguous_cpu(output);
  REMAT_DISPATCH_FLOATING_TYPES(output.dtype(), op, [&] {
    cpu::softmax_backward(grad_input.data_ptr<scalar_t>(), dy.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), g.outer,
                          g.dim_size, g.inner, kLog);
  });
}

}  // namespace

// The schemas and the Meta kernels, from the Defs (ops/softmax_defs.h).
REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_softmax_def([&](auto def) { structured::define<typename decltype(def)::type>(m, {}); });
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  for_each_softmax_def([&](auto def) { structured::impl_meta<typename decltype(def)::type>(m); });
}

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  using structured::CPUBackend;
  using structured::impl;
  impl<structured_softmax, CPUBackend, &softmax_cpu<false>>(m);
  impl<structured_log_softmax, CPUBackend, &softmax_cpu<true>>(m);
  impl<structured__softmax_backward_data, CPUBackend, &softmax_backward_cpu<false>>(m);
  impl<structured__log_softmax_backward_data, CPUBackend, &softmax_backward_cpu<true>>(m);
}

}  // namespace remat::ops
