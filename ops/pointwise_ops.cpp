// Mirrors ATen/native/PointwiseOps.cpp (addcmul_, addcdiv_), Lerp.cpp (lerp_.Scalar) and
// BinaryOps.cpp's maximum/minimum: meta functions and CPU/Meta kernels of the elementwise ops
// the optimizers (nn/optim) and clip_grad_norm_ are written with. The loops are in
// kernels/cpu/pointwise_ops.h.
#include "engine/dispatch/library.h"
#include "kernels/cpu/pointwise_ops.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace remat::ops {

// Meta functions, shared by every backend (declared in ops/meta.h).

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

// maximum / minimum: broadcasting, promoted dtype.
TensorMeta extremum_meta(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a, "self");
  check_defined(op, b, "other");
  Device device = common_device(op, {&a, &b});
  return {broadcast_shapes(op, a.sizes(), b.sizes()), promoteTypes(a.dtype(), b.dtype()), device};
}

namespace {

namespace cpu = kernels::cpu;

// ---------------------------------------------------------------------------------------------
// meta functions
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// addcmul_, addcdiv_: self += value * t1 (* or /) t2
// ---------------------------------------------------------------------------------------------

template <bool kDivide>
Tensor addc_cpu(const char* op, const Tensor& self, const Tensor& t1, const Tensor& t2, double value) {
  inplace_update_meta(op, self, {&t1, &t2});
  if (self.numel() > 0) {
    Tensor a = cast_cpu(t1, self.dtype()), b = cast_cpu(t2, self.dtype());
    auto loop = make_loop(self, {&self, &a, &b});
    REMAT_DISPATCH_FLOATING_TYPES(self.dtype(), op, [&] {
      scalar_t* s = self.data_ptr<scalar_t>();
      if constexpr (kDivide) {
        cpu::addcdiv_kernel(loop, s, s, a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), value);
      } else {
        cpu::addcmul_kernel(loop, s, s, a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), value);
      }
    });
  }
  self.impl()->bump_version();
  return self;
}
Tensor addcmul__cpu(const Tensor& self, const Tensor& t1, const Tensor& t2, double value) {
  return addc_cpu<false>("aten::addcmul_", self, t1, t2, value);
}
Tensor addcdiv__cpu(const Tensor& self, const Tensor& t1, const Tensor& t2, double value) {
  return addc_cpu<true>("aten::addcdiv_", self, t1, t2, value);
}
Tensor addcmul__meta(const Tensor& self, const Tensor& t1, const Tensor& t2, double) {
  inplace_update_meta("aten::addcmul_", self, {&t1, &t2});
  self.impl()->bump_version();
  return self;
}
Tensor addcdiv__meta(const Tensor& self, const Tensor& t1, const Tensor& t2, double) {
  inplace_update_meta("aten::addcdiv_", self, {&t1, &t2});
  self.impl()->bump_version();
  return self;
}

// ---------------------------------------------------------------------------------------------
// lerp_: self += weight * (end - self)
// ---------------------------------------------------------------------------------------------

Tensor lerp__cpu(const Tensor& self, const Tensor& end, double weight) {
  inplace_update_meta("aten::lerp_", self, {&end});
  if (self.numel() > 0) {
    Tensor e = cast_cpu(end, self.dtype());
    auto loop = make_loop(self, {&self, &e});
    REMAT_DISPATCH_FLOATING_TYPES(self.dtype(), "aten::lerp_", [&] {
      cpu::lerp_kernel(loop, self.data_ptr<scalar_t>(), self.data_ptr<scalar_t>(), e.data_ptr<scalar_t>(), weight);
    });
  }
  self.impl()->bump_version();
  return self;
}
Tensor lerp__meta(const Tensor& self, const Tensor& end, double) {
  inplace_update_meta("aten::lerp_", self, {&end});
  self.impl()->bump_version();
  return self;
}

// ---------------------------------------------------------------------------------------------
// maximum, minimum
// ---------------------------------------------------------------------------------------------

template <bool kMax>
Tensor extremum_cpu(const char* op, const Tensor& a, const Tensor& b) {
  Tensor out = empty_from(extremum_meta(op, a, b));
  if (out.numel() == 0) return out;
  Tensor ac = cast_cpu(a, out.dtype()), bc = cast_cpu(b, out.dtype());
  auto loop = make_loop(out, {&ac, &bc});
  REMAT_DISPATCH_ALL_TYPES(out.dtype(), op, [&] {
    cpu::extremum_kernel<scalar_t, kMax>(loop, out.data_ptr<scalar_t>(), ac.data_ptr<scalar_t>(),
                                         bc.data_ptr<scalar_t>());
  });
  return out;
}
Tensor maximum_cpu(const Tensor& a, const Tensor& b) { return extremum_cpu<true>("aten::maximum", a, b); }
Tensor minimum_cpu(const Tensor& a, const Tensor& b) { return extremum_cpu<false>("aten::minimum", a, b); }
Tensor maximum_meta(const Tensor& a, const Tensor& b) {
  TensorMeta m = extremum_meta("aten::maximum", a, b);
  m.device = Device{kMeta};
  return empty_from(m);
}
Tensor minimum_meta(const Tensor& a, const Tensor& b) {
  TensorMeta m = extremum_meta("aten::minimum", a, b);
  m.device = Device{kMeta};
  return empty_from(m);
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("addcmul_", REMAT_FN(addcmul__cpu));
  m.impl("addcdiv_", REMAT_FN(addcdiv__cpu));
  m.impl("lerp_.Scalar", REMAT_FN(lerp__cpu));
  m.impl("maximum", REMAT_FN(maximum_cpu));
  m.impl("minimum", REMAT_FN(minimum_cpu));
}

REMAT_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("addcmul_", REMAT_FN(addcmul__meta));
  m.impl("addcdiv_", REMAT_FN(addcdiv__meta));
  m.impl("lerp_.Scalar", REMAT_FN(lerp__meta));
  m.impl("maximum", REMAT_FN(maximum_meta));
  m.impl("minimum", REMAT_FN(minimum_meta));
}

}  // namespace remat::ops
