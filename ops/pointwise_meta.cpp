// Mirrors the TORCH_META_FUNCs of ATen/native/BinaryOps.cpp, UnaryOps.cpp, Activation.cpp,
// TensorCompare.cpp, PointwiseOps.cpp and Lerp.cpp, with the schemas and Meta kernels torchgen
// makes of them: the meta functions of the elementwise ops (shared by every backend: declared in
// ops/meta.h), and the ops of ops/pointwise.def defined and registered at the Meta key.
#include <cmath>

#include "engine/dispatch/library.h"
#include "ops/dispatch_dtype.h"
#include "ops/meta.h"
#include "ops/op_utils.h"
#include "ops/pointwise_defs.h"
#include "ops/structured.h"

namespace remat::ops {

TensorMeta binary_meta(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a, "self");
  check_defined(op, b, "other");
  Device device = common_device(op, {&a, &b});
  return {broadcast_shapes(op, a.sizes(), b.sizes()), promoteTypes(a.dtype(), b.dtype()), device};
}

TensorMeta unary_meta(const char* op, const Tensor& a, bool floating_only) {
  check_defined(op, a, "self");
  if (floating_only) check_floating(op, a, "self");
  return {a.sizes(), a.dtype(), a.device()};
}

void check_inplace_result(const char* op, const Tensor& self, const TensorMeta& m) {
  check_no_internal_overlap(op, self);
  REMAT_CHECK(m.sizes == self.sizes(), op, ": output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", m.sizes);
  REMAT_CHECK(m.dtype == self.dtype() || isFloatingType(self.dtype()), op, ": result type ", toString(m.dtype),
              " can't be cast to the desired output type ", toString(self.dtype()));
}

// div is true division: integer inputs give a float result (PyTorch's div, rounding_mode=None).
TensorMeta div_meta(const char* op, const Tensor& a, const Tensor& b) {
  TensorMeta m = binary_meta(op, a, b);
  if (!isFloatingType(m.dtype)) m.dtype = kFloat;
  return m;
}

bool is_fractional(double s) { return !std::isfinite(s) || s != std::trunc(s); }

// tensor op scalar: the scalar does not promote a floating tensor (a "wrapped number"); an
// integer tensor stays integral for an integral scalar and becomes float for a fractional one
// (or for true division), as PyTorch's result_type does for a Python float.
TensorMeta scalar_meta(const char* op, const Tensor& a, double s, bool true_div) {
  check_defined(op, a, "self");
  ScalarType dtype = a.dtype();
  if (!isFloatingType(dtype)) dtype = true_div || is_fractional(s) ? kFloat : kLong;
  return {a.sizes(), dtype, a.device()};
}

TensorMeta div_scalar_meta(const char* op, const Tensor& a, double s) { return scalar_meta(op, a, s, /*true_div=*/true); }

TensorMeta pow_meta(const char* op, const Tensor& a, double e) {
  check_defined(op, a, "self");
  check_floating(op, a, "self");
  return scalar_meta(op, a, e);
}

// self op= s writes into self: a fractional scalar cannot be stored in an integer tensor.
void check_inplace_scalar(const char* op, const Tensor& self, double s) {
  check_defined(op, self, "self");
  check_no_internal_overlap(op, self);
  REMAT_CHECK(isFloatingType(self.dtype()) || !is_fractional(s), op,
              ": result type Float can't be cast to the desired output type ", toString(self.dtype()),
              " (scalar ", s, ")");
}

void check_gelu_approximate(const std::string& approximate) {
  REMAT_CHECK(approximate == "none" || approximate == "tanh",
              "aten::gelu: approximate argument must be either none or tanh (got '", approximate, "')");
}

TensorMeta gelu_meta(const char* op, const Tensor& a, const std::string& approximate) {
  check_gelu_approximate(approximate);
  return unary_meta(op, a, /*floating_only=*/true);
}

void check_bool_mask(const char* op, const Tensor& mask) {
  REMAT_CHECK(mask.dtype() == kBool, op, ": expected a boolean mask, but got mask with dtype ", toString(mask.dtype()));
}

TensorMeta eq_meta(const char* op, const Tensor& a, const Tensor& b) {
  TensorMeta m = binary_meta(op, a, b);
  m.dtype = kBool;
  return m;
}

TensorMeta where_meta(const char* op, const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_bool_mask(op, cond);
  Device device = common_device(op, {&cond, &a, &b});
  Shape s = broadcast_shapes(op, broadcast_shapes(op, cond.sizes(), a.sizes()), b.sizes());
  return {s, promoteTypes(a.dtype(), b.dtype()), device};
}

TensorMeta masked_fill_meta(const char* op, const Tensor& self, const Tensor& mask, double) {
  check_bool_mask(op, mask);
  Device device = common_device(op, {&self, &mask});
  Shape s = broadcast_shapes(op, self.sizes(), mask.sizes());
  REMAT_CHECK(s == self.sizes(), op, ": mask of shape ", mask.sizes(), " does not broadcast to the tensor's shape ",
              self.sizes());
  return {self.sizes(), self.dtype(), device};
}

// The kernels compute in a floating type: the CPU dispatch's error ("not implemented for
// 'Long'"), raised here so that every backend, Meta too, raises it.
TensorMeta grad_meta(const char* op, const Tensor& grad_output, const Tensor& x) {
  TensorMeta m = binary_meta(op, grad_output, x);
  if (!isFloatingType(m.dtype)) REMAT_DTYPE_ERROR(m.dtype, op);
  return m;
}

TensorMeta threshold_backward_meta(const char* op, const Tensor& grad_output, const Tensor& self, double) {
  return grad_meta(op, grad_output, self);
}

TensorMeta gelu_backward_meta(const char* op, const Tensor& grad_output, const Tensor& self,
                              const std::string& approximate) {
  check_gelu_approximate(approximate);
  return grad_meta(op, grad_output, self);
}

// An in-place update of a floating self by other operands that broadcast to self's shape.
void inplace_update_meta(const char* op, const Tensor& self, std::initializer_list<const Tensor*> others) {
  check_defined(op, self, "self");
  check_floating(op, self, "self");
  check_no_internal_overlap(op, self);
  Shape shape = self.sizes();
  for (const Tensor* t : others) {
    check_defined(op, *t, "tensor");
    common_device(op, {&self, t});
    shape = broadcast_shapes(op, shape, t->sizes());
  }
  REMAT_CHECK(shape == self.sizes(), op, ": output with shape ", self.sizes(), " doesn't match the broadcast shape ",
              shape);
}

void addc_meta(const char* op, const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, double) {
  inplace_update_meta(op, self, {&tensor1, &tensor2});
}

void lerp_meta(const char* op, const Tensor& self, const Tensor& end, double) { inplace_update_meta(op, self, {&end}); }

// The schemas of the table's ops (their in-place variants untagged, as before).
REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_pointwise_def([&](auto def) { structured::define<typename decltype(def)::type>(m, {Tag::pointwise}); });
}

// The Meta kernels: the meta function alone.
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  for_each_pointwise_def([&](auto def) { structured::impl_meta<typename decltype(def)::type>(m); });
}

}  // namespace remat::ops
