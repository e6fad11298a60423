// Mirrors ATen/native/SoftMax.cpp: softmax, log_softmax, _masked_softmax and their backward
// kernels (_softmax_backward_data, _log_softmax_backward_data, _masked_softmax_backward) over any dim: their meta functions, their
// CPU kernels, and their schemas and CPU/Meta registrations from their Defs (ops/softmax_defs.h,
// ops/structured.h). The loops are in
// kernels/cpu/softmax.h; a strided input is made contiguous first.
#include "kernels/cpu/softmax.h"

#include "engine/dispatch/library.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/meta.h"
#include "ops/meta_copies.h"
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

MaskedSoftmaxGeometry masked_softmax_geometry(const Shape& sizes, const Tensor& mask) {
  MaskedSoftmaxGeometry g;
  g.dim_size = sizes.back();
  g.rows = prod(sizes, 0, sizes.size() - 1);
  g.mask_rows = mask.sizes() == sizes ? g.rows : mask.sizes()[0];
  return g;
}

namespace {

// The checks both _masked_softmax and its backward make of the mask and dim: a Bool mask on x's
// device, of x's shape or (kTwoD) [L, S] for a 4-D x; the softmax over the last dim (remat's
// kernels take no other; PyTorch's expand the mask for another dim).
void check_masked_softmax_args(const char* op, const Tensor& x, const char* x_name, const Tensor& mask,
                               std::optional<int64_t> dim, bool two_d) {
  REMAT_CHECK(mask.dtype() == kBool, op, ": Mask should be a boolean tensor, got ", toString(mask.dtype()));
  REMAT_CHECK(x.dim() >= 1, op, ": remat's kernel needs a ", x_name, " of at least 1 dim, got a 0-d ", x_name);
  if (two_d) {
    const Shape ls{x.sizes()[2], x.sizes()[3]};
    REMAT_CHECK(mask.sizes() == ls, op, ": For mask_type == 0 mask shape should be (L, S) = ", ls, ", got ",
                mask.sizes());
  } else {
    REMAT_CHECK(mask.sizes() == x.sizes(), op, ": For mask_type == 2 mask shape should match ", x_name, " shape ",
                x.sizes(), ", got ", mask.sizes());
  }
  if (dim.has_value()) {
    const int64_t d = maybe_wrap_dim(*dim, x.dim(), op);
    REMAT_CHECK(d == x.dim() - 1, op, ": remat's kernel takes only the last dim (", x.dim() - 1, " of a ", x.dim(),
                "-d ", x_name, "), got dim = ", *dim);
  }
}

}  // namespace

// PyTorch's masked_softmax_cpu: a 2-D mask of a 4-D input is mask_type 0 or 1 as asked, any
// other mask is mask_type 2 (self's shape). remat has no padding mask (mask_type 1), and its
// mask_type 0 takes [L, S] (PyTorch's check asks L == S).
TensorMeta masked_softmax_meta(const char* op, const Tensor& self, const Tensor& mask, std::optional<int64_t> dim,
                               std::optional<int64_t> mask_type) {
  check_defined(op, self, "self");
  check_defined(op, mask, "mask");
  check_floating(op, self, "self");
  Device device = common_device(op, {&self, &mask});
  std::optional<int64_t> type = mask_type;
  if (mask.dim() != 2 || self.dim() != 4) type = 2;
  REMAT_CHECK(type.has_value() && (*type == 0 || *type == 2), op, ": Unsupported mask type ",
              type.has_value() ? std::to_string(*type) : std::string("None"),
              " (remat takes 0, an [L, S] mask of a 4-D input, and 2, a mask of the input's shape)");
  check_masked_softmax_args(op, self, "input", mask, dim, *type == 0);
  return {self.sizes(), self.dtype(), device};
}

// grad_output and output as for _softmax_backward_data; the mask of their shape or, for 4-D
// ones, [L, S] (remat's; PyTorch's backward takes a mask of grad's shape only).
TensorMeta masked_softmax_backward_meta(const char* op, const Tensor& grad_output, const Tensor& output,
                                        const Tensor& mask, std::optional<int64_t> dim) {
  check_defined(op, mask, "mask");
  TensorMeta m = softmax_backward_meta(op, grad_output, output, output.dim() > 0 ? output.dim() - 1 : 0);
  common_device(op, {&grad_output, &mask});
  check_masked_softmax_args(op, grad_output, "grad", mask, dim, mask.dim() == 2 && grad_output.dim() == 4);
  return m;
}

namespace {

namespace cpu = kernels::cpu;

// The _masked_softmax kernels: contiguous operands (the attention scores are), else copies.
void masked_softmax_cpu(const char* op, const Tensor& out, const Tensor& self, const Tensor& mask,
                        std::optional<int64_t> dim, std::optional<int64_t> mask_type) {
  MaskedSoftmaxGeometry g = masked_softmax_geometry(self.sizes(), mask);
  const MaskedSoftmaxTemporaries r = masked_softmax_temporaries<CPUCopies>(out, self, mask, dim, mask_type);
  REMAT_DISPATCH_FLOATING_TYPES(self.dtype(), op, [&] {
    cpu::masked_softmax_forward(out.data_ptr<scalar_t>(), r.x.data_ptr<scalar_t>(), r.mask.data_ptr<bool>(), g.rows,
                                g.dim_size, g.mask_rows);
  });
}

void masked_softmax_backward_cpu(const char* op, const Tensor& grad_input, const Tensor& grad_output,
                                 const Tensor& output, const Tensor& mask, std::optional<int64_t> dim) {
  MaskedSoftmaxGeometry g = masked_softmax_geometry(output.sizes(), mask);
  const MaskedSoftmaxBackwardTemporaries r =
      masked_softmax_backward_temporaries<CPUCopies>(grad_input, grad_output, output, mask, dim);
  REMAT_DISPATCH_FLOATING_TYPES(output.dtype(), op, [&] {
    cpu::masked_softmax_backward(grad_input.data_ptr<scalar_t>(), r.dy.data_ptr<scalar_t>(), r.y.data_ptr<scalar_t>(),
                                 r.mask.data_ptr<bool>(), g.rows, g.dim_size, g.mask_rows);
  });
}

// The Meta kernels' temporaries (structured::impl_meta): the same copies on every backend.
void masked_softmax_meta_temporaries(const Tensor& out, const Tensor& self, const Tensor& mask,
                                     std::optional<int64_t> dim, std::optional<int64_t> mask_type) {
  masked_softmax_temporaries<MetaCopies>(out, self, mask, dim, mask_type);
}
void masked_softmax_backward_meta_temporaries(const Tensor& grad_input, const Tensor& grad_output,
                                              const Tensor& output, const Tensor& mask, std::optional<int64_t> dim) {
  masked_softmax_backward_temporaries<MetaCopies>(grad_input, grad_output, output, mask, dim);
}

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
  structured::impl_meta<structured_softmax>(m);
  structured::impl_meta<structured_log_softmax>(m);
  structured::impl_meta<structured__softmax_backward_data>(m);
  structured::impl_meta<structured__log_softmax_backward_data>(m);
  structured::impl_meta<structured__masked_softmax, &masked_softmax_meta_temporaries>(m);
  structured::impl_meta<structured__masked_softmax_backward, &masked_softmax_backward_meta_temporaries>(m);
}

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  using structured::CPUBackend;
  using structured::impl;
  impl<structured_softmax, CPUBackend, &softmax_cpu<false>>(m);
  impl<structured_log_softmax, CPUBackend, &softmax_cpu<true>>(m);
  impl<structured__softmax_backward_data, CPUBackend, &softmax_backward_cpu<false>>(m);
  impl<structured__log_softmax_backward_data, CPUBackend, &softmax_backward_cpu<true>>(m);
  impl<structured__masked_softmax, CPUBackend, &masked_softmax_cpu>(m);
  impl<structured__masked_softmax_backward, CPUBackend, &masked_softmax_backward_cpu>(m);
}

}  // namespace remat::ops
