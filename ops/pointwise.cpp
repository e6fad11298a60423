// Mirrors ATen/native/BinaryOps.cpp, UnaryOps.cpp, Activation.cpp and TensorCompare.cpp:
// meta functions and CPU/Meta kernels of the elementwise ops. The loops are in
// kernels/cpu/pointwise.h.
#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/dispatch/library.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/pointwise.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace remat::ops {

// ---------------------------------------------------------------------------------------------
// meta functions (shared by every backend: declared in ops/meta.h)
// ---------------------------------------------------------------------------------------------

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

// An in-place op writes into self: the other operand must broadcast to self's shape.
void inplace_meta(const char* op, const Tensor& self, const Tensor& other) {
  TensorMeta m = binary_meta(op, self, other);
  check_no_internal_overlap(op, self);
  REMAT_CHECK(m.sizes == self.sizes(), op, ": output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", m.sizes);
  REMAT_CHECK(m.dtype == self.dtype() || isFloatingType(self.dtype()), op, ": result type ", toString(m.dtype),
              " can't be cast to the desired output type ", toString(self.dtype()));
}

// div is true division: integer inputs give a float result (PyTorch's div, rounding_mode=None).
TensorMeta div_meta(const Tensor& a, const Tensor& b) {
  TensorMeta m = binary_meta("aten::div", a, b);
  if (!isFloatingType(m.dtype)) m.dtype = kFloat;
  return m;
}

// A fractional (or non-finite) scalar cannot be applied to an integer tensor without promotion.
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

TensorMeta pow_meta(const Tensor& a, double e) {
  check_defined("aten::pow", a, "self");
  check_floating("aten::pow", a, "self");
  return scalar_meta("aten::pow", a, e);
}

void check_gelu_approximate(const std::string& approximate) {
  REMAT_CHECK(approximate == "none" || approximate == "tanh",
              "aten::gelu: approximate argument must be either none or tanh (got '", approximate, "')");
}

void check_bool_mask(const char* op, const Tensor& mask) {
  REMAT_CHECK(mask.dtype() == kBool, op, ": expected a boolean mask, but got mask with dtype ", toString(mask.dtype()));
}

TensorMeta where_meta(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_bool_mask("aten::where", cond);
  Device device = common_device("aten::where", {&cond, &a, &b});
  Shape s = broadcast_shapes("aten::where", broadcast_shapes("aten::where", cond.sizes(), a.sizes()), b.sizes());
  return {s, promoteTypes(a.dtype(), b.dtype()), device};
}

TensorMeta masked_fill_meta(const Tensor& self, const Tensor& mask) {
  check_bool_mask("aten::masked_fill", mask);
  Device device = common_device("aten::masked_fill", {&self, &mask});
  Shape s = broadcast_shapes("aten::masked_fill", self.sizes(), mask.sizes());
  REMAT_CHECK(s == self.sizes(), "aten::masked_fill: mask of shape ", mask.sizes(),
              " does not broadcast to the tensor's shape ", self.sizes());
  return {self.sizes(), self.dtype(), device};
}

// self op= s writes into self: a fractional scalar cannot be stored in an integer tensor.
void check_inplace_scalar(const char* op, const Tensor& self, double s) {
  check_defined(op, self, "self");
  check_no_internal_overlap(op, self);
  REMAT_CHECK(isFloatingType(self.dtype()) || !is_fractional(s), op,
              ": result type Float can't be cast to the desired output type ", toString(self.dtype()),
              " (scalar ", s, ")");
}

namespace {

namespace cpu = kernels::cpu;

Tensor meta_out(TensorMeta m) {
  m.device = Device{kMeta};
  return empty_from(m);
}

// ---------------------------------------------------------------------------------------------
// binary ops
// ---------------------------------------------------------------------------------------------

template <class Op>
void binary_into(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0 || out.is_meta()) return;
  const ScalarType dt = out.dtype();
  if (a.dtype() == dt && b.dtype() == dt && a.is_contiguous() && b.is_contiguous() && out.is_contiguous() &&
      a.sizes() == out.sizes() && b.sizes() == out.sizes()) {
    // Same shape, contiguous: one flat loop (the common case; skips the iteration setup).
    kernels::cpu::LoopShape flat;
    flat.ndim = 1;
    flat.noperands = 3;
    flat.sizes[0] = out.numel();
    flat.strides[0][0] = flat.strides[1][0] = flat.strides[2][0] = 1;
    REMAT_DISPATCH_NUMERIC_TYPES(dt, op, [&] {
      cpu::binary_kernel<Op, scalar_t>(flat, out.data_ptr<scalar_t>(), a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>());
    });
    return;
  }
  Tensor ac = cast_cpu(a, dt), bc = cast_cpu(b, dt);
  auto loop = make_loop(out, {&ac, &bc});
  REMAT_DISPATCH_NUMERIC_TYPES(out.dtype(), op, [&] {
    cpu::binary_kernel<Op, scalar_t>(loop, out.data_ptr<scalar_t>(), ac.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>());
  });
}

template <class Op>
Tensor binary_cpu(const char* op, const TensorMeta& meta, const Tensor& a, const Tensor& b) {
  Tensor out = empty_from(meta);
  binary_into<Op>(op, out, a, b);
  return out;
}

Tensor add_cpu(const Tensor& a, const Tensor& b) { return binary_cpu<cpu::AddOp>("aten::add", binary_meta("aten::add", a, b), a, b); }
Tensor sub_cpu(const Tensor& a, const Tensor& b) { return binary_cpu<cpu::SubOp>("aten::sub", binary_meta("aten::sub", a, b), a, b); }
Tensor mul_cpu(const Tensor& a, const Tensor& b) { return binary_cpu<cpu::MulOp>("aten::mul", binary_meta("aten::mul", a, b), a, b); }
Tensor div_cpu(const Tensor& a, const Tensor& b) { return binary_cpu<cpu::DivOp>("aten::div", div_meta(a, b), a, b); }
Tensor binary_meta_kernel_add(const Tensor& a, const Tensor& b) { return meta_out(binary_meta("aten::add", a, b)); }
Tensor binary_meta_kernel_sub(const Tensor& a, const Tensor& b) { return meta_out(binary_meta("aten::sub", a, b)); }
Tensor binary_meta_kernel_mul(const Tensor& a, const Tensor& b) { return meta_out(binary_meta("aten::mul", a, b)); }
Tensor binary_meta_kernel_div(const Tensor& a, const Tensor& b) { return meta_out(div_meta(a, b)); }

template <class F>
Tensor scalar_cpu(const char* op, const TensorMeta& meta, const Tensor& a, const F& f) {
  Tensor out = empty_from(meta);
  Tensor ac = cast_cpu(a, out.dtype());
  auto loop = make_loop(out, {&ac});
  REMAT_DISPATCH_NUMERIC_TYPES(out.dtype(), op, [&] {
    cpu::unary_scalar_kernel(loop, out.data_ptr<scalar_t>(), ac.data_ptr<scalar_t>(),
                             [&](auto x) { return f(x); });
  });
  return out;
}

Tensor add_scalar_cpu(const Tensor& a, double s) {
  return scalar_cpu("aten::add.Scalar", scalar_meta("aten::add.Scalar", a, s), a,
                    [s](auto x) { return x + static_cast<decltype(x)>(s); });
}
Tensor mul_scalar_cpu(const Tensor& a, double s) {
  return scalar_cpu("aten::mul.Scalar", scalar_meta("aten::mul.Scalar", a, s), a,
                    [s](auto x) { return x * static_cast<decltype(x)>(s); });
}
Tensor div_scalar_cpu(const Tensor& a, double s) {
  return scalar_cpu("aten::div.Scalar", scalar_meta("aten::div.Scalar", a, s, /*true_div=*/true), a,
                    [s](auto x) { return x / static_cast<decltype(x)>(s); });
}
Tensor pow_cpu(const Tensor& a, double e) {
  TensorMeta m = pow_meta(a, e);
  if (e == 2.0) return scalar_cpu("aten::pow", m, a, [](auto x) { return x * x; });
  return scalar_cpu("aten::pow", m, a, [e](auto x) { return std::pow(x, static_cast<decltype(x)>(e)); });
}
Tensor add_scalar_meta(const Tensor& a, double s) { return meta_out(scalar_meta("aten::add.Scalar", a, s)); }
Tensor mul_scalar_meta(const Tensor& a, double s) { return meta_out(scalar_meta("aten::mul.Scalar", a, s)); }
Tensor div_scalar_meta(const Tensor& a, double s) { return meta_out(scalar_meta("aten::div.Scalar", a, s, true)); }
Tensor pow_meta_kernel(const Tensor& a, double e) { return meta_out(pow_meta(a, e)); }

// ---------------------------------------------------------------------------------------------
// unary ops
// ---------------------------------------------------------------------------------------------

// neg, abs and relu also take integer tensors; the others need a floating point one.
template <class Op>
constexpr bool kFloatingOnly = !std::is_same_v<Op, cpu::NegOp> && !std::is_same_v<Op, cpu::AbsOp> &&
                               !std::is_same_v<Op, cpu::ReluOp>;

template <class Op>
Tensor unary_cpu(const char* op, const Tensor& a) {
  Tensor out = empty_from(unary_meta(op, a, kFloatingOnly<Op>));
  if (out.numel() == 0) return out;
  auto loop = make_loop(out, {&a});
  REMAT_DISPATCH_NUMERIC_TYPES(out.dtype(), op, [&] {
    cpu::unary_kernel<Op, scalar_t>(loop, out.data_ptr<scalar_t>(), a.data_ptr<scalar_t>());
  });
  return out;
}

#define REMAT_UNARY_CPU(NAME, OP)                                                   \
  Tensor NAME##_cpu(const Tensor& a) { return unary_cpu<cpu::OP>("aten::" #NAME, a); } \
  Tensor NAME##_meta(const Tensor& a) { return meta_out(unary_meta("aten::" #NAME, a, kFloatingOnly<cpu::OP>)); }
REMAT_UNARY_CPU(neg, NegOp)
REMAT_UNARY_CPU(exp, ExpOp)
REMAT_UNARY_CPU(log, LogOp)
REMAT_UNARY_CPU(sin, SinOp)
REMAT_UNARY_CPU(cos, CosOp)
REMAT_UNARY_CPU(tanh, TanhOp)
REMAT_UNARY_CPU(sigmoid, SigmoidOp)
REMAT_UNARY_CPU(relu, ReluOp)
REMAT_UNARY_CPU(silu, SiluOp)
REMAT_UNARY_CPU(sqrt, SqrtOp)
REMAT_UNARY_CPU(rsqrt, RsqrtOp)
REMAT_UNARY_CPU(abs, AbsOp)
#undef REMAT_UNARY_CPU

using namespace cpu::gelu_constants;

Tensor gelu_cpu(const Tensor& a, const std::string& approximate) {
  check_gelu_approximate(approximate);
  bool tanh_form = approximate == "tanh";
  Tensor out = empty_from(unary_meta("aten::gelu", a, true));
  auto loop = make_loop(out, {&a});
  REMAT_DISPATCH_FLOATING_TYPES(out.dtype(), "aten::gelu", [&] {
    if constexpr (cpu::kEigenVectorizable<scalar_t> || cpu::kFloatBlocks<scalar_t>) {
      if (loop.is_contiguous()) {
        cpu::gelu_contiguous(out.data_ptr<scalar_t>(), a.data_ptr<scalar_t>(), out.numel(), tanh_form);
        return;
      }
    }
    cpu::unary_scalar_kernel(loop, out.data_ptr<scalar_t>(), a.data_ptr<scalar_t>(), [tanh_form](auto x) {
      using T = decltype(x);
      if (tanh_form) {
        T inner = T(kBeta) * (x + T(kKappa) * x * x * x);
        return T(0.5) * x * (T(1) + std::tanh(inner));
      }
      return x * T(0.5) * (T(1) + std::erf(x * T(kSqrt1_2)));
    });
  });
  return out;
}
Tensor gelu_meta(const Tensor& a, const std::string& approximate) {
  check_gelu_approximate(approximate);
  return meta_out(unary_meta("aten::gelu", a, true));
}

// ---------------------------------------------------------------------------------------------
// fused backward kernels: grad_input = f(grad_output, x)
// ---------------------------------------------------------------------------------------------

template <class F>
Tensor grad_map_cpu(const char* op, const Tensor& grad, const Tensor& x, const F& f) {
  TensorMeta m = binary_meta(op, grad, x);
  Tensor out = empty_from(m);
  Tensor gc = cast_cpu(grad, m.dtype), xc = cast_cpu(x, m.dtype);
  auto loop = make_loop(out, {&gc, &xc});
  REMAT_DISPATCH_FLOATING_TYPES(m.dtype, op, [&] {
    cpu::binary_map(loop, out.data_ptr<scalar_t>(), gc.data_ptr<scalar_t>(), xc.data_ptr<scalar_t>(),
                    [&](scalar_t g, scalar_t v) {
                      using A = cpu::acc_t<scalar_t>;
                      return scalar_t(f(A(g), A(v)));
                    });
  });
  return out;
}
Tensor grad_map_meta(const Tensor& g, const Tensor& x) { return meta_out(binary_meta("backward", g, x)); }

Tensor threshold_backward_cpu(const Tensor& grad, const Tensor& self, double threshold) {
  return grad_map_cpu("aten::threshold_backward", grad, self,
                      [threshold](auto g, auto x) { return x <= threshold ? decltype(g)(0) : g; });
}
Tensor threshold_backward_meta(const Tensor& g, const Tensor& x, double) { return grad_map_meta(g, x); }

Tensor sigmoid_backward_cpu(const Tensor& grad, const Tensor& out) {
  // forward: y = sigmoid(x); dy/dx = y * (1 - y)
  return grad_map_cpu("aten::sigmoid_backward", grad, out, [](auto g, auto y) { return g * y * (decltype(y)(1) - y); });
}
Tensor tanh_backward_cpu(const Tensor& grad, const Tensor& out) {
  // forward: y = tanh(x); dy/dx = 1 - y^2
  return grad_map_cpu("aten::tanh_backward", grad, out, [](auto g, auto y) { return g * (decltype(y)(1) - y * y); });
}
Tensor silu_backward_cpu(const Tensor& grad, const Tensor& self) {
  // forward: y = x * s, s = sigmoid(x); dy/dx = s * (1 + x * (1 - s))
  return grad_map_cpu("aten::silu_backward", grad, self, [](auto g, auto x) {
    using T = decltype(x);
    T s = T(1) / (T(1) + std::exp(-x));
    return g * s * (T(1) + x * (T(1) - s));
  });
}
Tensor gelu_backward_cpu(const Tensor& grad, const Tensor& self, const std::string& approximate) {
  check_gelu_approximate(approximate);
  bool tanh_form = approximate == "tanh";
  TensorMeta m = binary_meta("aten::gelu_backward", grad, self);
  if ((m.dtype == kFloat || m.dtype == kDouble || m.dtype == kBFloat16) && grad.dtype() == m.dtype &&
      self.dtype() == m.dtype &&
      grad.sizes() == m.sizes && self.sizes() == m.sizes && grad.is_contiguous() && self.is_contiguous()) {
    Tensor out = empty_from(m);
    REMAT_DISPATCH_FLOATING_TYPES(m.dtype, "aten::gelu_backward", [&] {
      if constexpr (cpu::kEigenVectorizable<scalar_t> || cpu::kFloatBlocks<scalar_t>)
        cpu::gelu_backward_contiguous(out.data_ptr<scalar_t>(), grad.data_ptr<scalar_t>(),
                                      self.data_ptr<scalar_t>(), out.numel(), tanh_form);
    });
    return out;
  }
  return grad_map_cpu("aten::gelu_backward", grad, self, [tanh_form](auto g, auto x) {
    using T = decltype(x);
    if (tanh_form) {
      // forward: y = 0.5 x (1 + tanh(u)), u = k (x + c x^3); the formula of the contiguous
      // kernel (kernels/cpu/activation.h): one exp, no cancellation where tanh saturates
      T x2 = x * x;
      T u = T(kBeta) * (x + T(kKappa) * x2 * x);
      const T cap = std::log(std::numeric_limits<T>::max()) - T(1);
      T e = std::exp(std::min(T(-2) * u, cap));
      T r = T(1) / (T(1) + e);
      return g * (r + T(2) * x * (e * r) * r * (T(kBeta) * (T(1) + T(3 * kKappa) * x2)));
    }
    // forward: y = x Phi(x); dy/dx = Phi(x) + x phi(x)
    T cdf = T(0.5) * (T(1) + std::erf(x * T(kSqrt1_2)));
    T pdf = std::exp(T(-0.5) * x * x) * T(0.39894228040143267794);  // 1/sqrt(2 pi)
    return g * (cdf + x * pdf);
  });
}
Tensor gelu_backward_meta(const Tensor& g, const Tensor& x, const std::string& approximate) {
  check_gelu_approximate(approximate);
  return grad_map_meta(g, x);
}

// ---------------------------------------------------------------------------------------------
// eq, where, masked_fill
// ---------------------------------------------------------------------------------------------

Tensor eq_cpu(const Tensor& a, const Tensor& b) {
  TensorMeta m = binary_meta("aten::eq", a, b);
  Tensor out = make_empty(m.sizes, kBool, m.device);
  Tensor ac = cast_cpu(a, m.dtype), bc = cast_cpu(b, m.dtype);
  auto loop = make_loop(out, {&ac, &bc});
  REMAT_DISPATCH_ALL_TYPES(m.dtype, "aten::eq", [&] {
    cpu::binary_map(loop, out.data_ptr<bool>(), ac.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(),
                    [](scalar_t x, scalar_t y) {
                      using A = cpu::acc_t<scalar_t>;
                      return static_cast<A>(x) == static_cast<A>(y);
                    });
  });
  return out;
}
Tensor eq_meta(const Tensor& a, const Tensor& b) {
  TensorMeta m = binary_meta("aten::eq", a, b);
  return make_empty(m.sizes, kBool, Device{kMeta});
}

// ---------------------------------------------------------------------------------------------
// where, masked_fill
// ---------------------------------------------------------------------------------------------

// A bool tensor's elements as bytes (0 or 1), for loops the compiler should vectorise.
const uint8_t* mask_bytes(const Tensor& mask) { return reinterpret_cast<const uint8_t*>(mask.data_ptr<bool>()); }

Tensor where_cpu(const Tensor& cond, const Tensor& a, const Tensor& b) {
  TensorMeta m = where_meta(cond, a, b);
  Tensor out = empty_from(m);
  Tensor ac = cast_cpu(a, m.dtype), bc = cast_cpu(b, m.dtype);
  auto loop = make_loop(out, {&cond, &ac, &bc});
  REMAT_DISPATCH_ALL_TYPES(m.dtype, "aten::where", [&] {
    cpu::ternary_map(loop, out.data_ptr<scalar_t>(), mask_bytes(cond), ac.data_ptr<scalar_t>(),
                     bc.data_ptr<scalar_t>(), [](uint8_t c, scalar_t x, scalar_t y) { return c ? x : y; });
  });
  return out;
}
Tensor where_meta_kernel(const Tensor& c, const Tensor& a, const Tensor& b) { return meta_out(where_meta(c, a, b)); }

Tensor masked_fill_cpu(const Tensor& self, const Tensor& mask, double value) {
  Tensor out = empty_from(masked_fill_meta(self, mask));
  auto loop = make_loop(out, {&self, &mask});
  REMAT_DISPATCH_ALL_TYPES(out.dtype(), "aten::masked_fill", [&] {
    scalar_t v = static_cast<scalar_t>(value);
    // The mask read as bytes: the compiler has no vector type for bool, so a bool loop stays scalar.
    cpu::binary_map(loop, out.data_ptr<scalar_t>(), self.data_ptr<scalar_t>(), mask_bytes(mask),
                    [v](scalar_t x, uint8_t m) { return m ? v : x; });
  });
  return out;
}
Tensor masked_fill_meta_kernel(const Tensor& self, const Tensor& mask, double) {
  return meta_out(masked_fill_meta(self, mask));
}

// ---------------------------------------------------------------------------------------------
// in-place ops: write into self, bump its version
// ---------------------------------------------------------------------------------------------

Tensor add__cpu(const Tensor& self, const Tensor& other) {
  inplace_meta("aten::add_", self, other);
  binary_into<cpu::AddOp>("aten::add_", self, self, other);
  self.impl()->bump_version();
  return self;
}
Tensor mul__cpu(const Tensor& self, const Tensor& other) {
  inplace_meta("aten::mul_", self, other);
  binary_into<cpu::MulOp>("aten::mul_", self, self, other);
  self.impl()->bump_version();
  return self;
}
Tensor inplace_binary_meta_add(const Tensor& self, const Tensor& other) {
  inplace_meta("aten::add_", self, other);
  self.impl()->bump_version();
  return self;
}
Tensor inplace_binary_meta_mul(const Tensor& self, const Tensor& other) {
  inplace_meta("aten::mul_", self, other);
  self.impl()->bump_version();
  return self;
}

template <class F>
Tensor inplace_scalar_cpu(const char* op, const Tensor& self, const F& f) {
  check_defined(op, self, "self");
  check_no_internal_overlap(op, self);
  if (self.numel() > 0 && !self.is_meta()) {
    auto loop = make_loop(self, {&self});
    REMAT_DISPATCH_NUMERIC_TYPES(self.dtype(), op, [&] {
      cpu::unary_scalar_kernel(loop, self.data_ptr<scalar_t>(), self.data_ptr<scalar_t>(),
                               [&](auto x) { return f(x); });
    });
  }
  self.impl()->bump_version();
  return self;
}
Tensor add__scalar_cpu(const Tensor& self, double s) {
  check_inplace_scalar("aten::add_.Scalar", self, s);
  return inplace_scalar_cpu("aten::add_.Scalar", self, [s](auto x) { return x + static_cast<decltype(x)>(s); });
}
Tensor mul__scalar_cpu(const Tensor& self, double s) {
  check_inplace_scalar("aten::mul_.Scalar", self, s);
  return inplace_scalar_cpu("aten::mul_.Scalar", self, [s](auto x) { return x * static_cast<decltype(x)>(s); });
}
Tensor relu__cpu(const Tensor& self) {
  return inplace_scalar_cpu("aten::relu_", self, [](auto x) { return x > decltype(x)(0) ? x : decltype(x)(0); });
}
Tensor add__scalar_meta(const Tensor& self, double s) {
  check_inplace_scalar("aten::add_.Scalar", self, s);
  self.impl()->bump_version();
  return self;
}
Tensor mul__scalar_meta(const Tensor& self, double s) {
  check_inplace_scalar("aten::mul_.Scalar", self, s);
  self.impl()->bump_version();
  return self;
}
Tensor relu__meta(const Tensor& self) {
  check_no_internal_overlap("aten::relu_", self);
  self.impl()->bump_version();
  return self;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("add", REMAT_FN(add_cpu));
  m.impl("sub", REMAT_FN(sub_cpu));
  m.impl("mul", REMAT_FN(mul_cpu));
  m.impl("div", REMAT_FN(div_cpu));
  m.impl("add.Scalar", REMAT_FN(add_scalar_cpu));
  m.impl("mul.Scalar", REMAT_FN(mul_scalar_cpu));
  m.impl("div.Scalar", REMAT_FN(div_scalar_cpu));
  m.impl("pow", REMAT_FN(pow_cpu));
  m.impl("neg", REMAT_FN(neg_cpu));
  m.impl("exp", REMAT_FN(exp_cpu));
  m.impl("log", REMAT_FN(log_cpu));
  m.impl("sin", REMAT_FN(sin_cpu));
  m.impl("cos", REMAT_FN(cos_cpu));
  m.impl("tanh", REMAT_FN(tanh_cpu));
  m.impl("sigmoid", REMAT_FN(sigmoid_cpu));
  m.impl("relu", REMAT_FN(relu_cpu));
  m.impl("silu", REMAT_FN(silu_cpu));
  m.impl("sqrt", REMAT_FN(sqrt_cpu));
  m.impl("rsqrt", REMAT_FN(rsqrt_cpu));
  m.impl("abs", REMAT_FN(abs_cpu));
  m.impl("gelu", REMAT_FN(gelu_cpu));
  m.impl("threshold_backward", REMAT_FN(threshold_backward_cpu));
  m.impl("sigmoid_backward", REMAT_FN(sigmoid_backward_cpu));
  m.impl("tanh_backward", REMAT_FN(tanh_backward_cpu));
  m.impl("silu_backward", REMAT_FN(silu_backward_cpu));
  m.impl("gelu_backward", REMAT_FN(gelu_backward_cpu));
  m.impl("eq", REMAT_FN(eq_cpu));
  m.impl("where", REMAT_FN(where_cpu));
  m.impl("masked_fill", REMAT_FN(masked_fill_cpu));
  m.impl("add_", REMAT_FN(add__cpu));
  m.impl("mul_", REMAT_FN(mul__cpu));
  m.impl("add_.Scalar", REMAT_FN(add__scalar_cpu));
  m.impl("mul_.Scalar", REMAT_FN(mul__scalar_cpu));
  m.impl("relu_", REMAT_FN(relu__cpu));
}

REMAT_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("add", REMAT_FN(binary_meta_kernel_add));
  m.impl("sub", REMAT_FN(binary_meta_kernel_sub));
  m.impl("mul", REMAT_FN(binary_meta_kernel_mul));
  m.impl("div", REMAT_FN(binary_meta_kernel_div));
  m.impl("add.Scalar", REMAT_FN(add_scalar_meta));
  m.impl("mul.Scalar", REMAT_FN(mul_scalar_meta));
  m.impl("div.Scalar", REMAT_FN(div_scalar_meta));
  m.impl("pow", REMAT_FN(pow_meta_kernel));
  m.impl("neg", REMAT_FN(neg_meta));
  m.impl("exp", REMAT_FN(exp_meta));
  m.impl("log", REMAT_FN(log_meta));
  m.impl("sin", REMAT_FN(sin_meta));
  m.impl("cos", REMAT_FN(cos_meta));
  m.impl("tanh", REMAT_FN(tanh_meta));
  m.impl("sigmoid", REMAT_FN(sigmoid_meta));
  m.impl("relu", REMAT_FN(relu_meta));
  m.impl("silu", REMAT_FN(silu_meta));
  m.impl("sqrt", REMAT_FN(sqrt_meta));
  m.impl("rsqrt", REMAT_FN(rsqrt_meta));
  m.impl("abs", REMAT_FN(abs_meta));
  m.impl("gelu", REMAT_FN(gelu_meta));
  m.impl("threshold_backward", REMAT_FN(threshold_backward_meta));
  m.impl("sigmoid_backward", REMAT_FN(grad_map_meta));
  m.impl("tanh_backward", REMAT_FN(grad_map_meta));
  m.impl("silu_backward", REMAT_FN(grad_map_meta));
  m.impl("gelu_backward", REMAT_FN(gelu_backward_meta));
  m.impl("eq", REMAT_FN(eq_meta));
  m.impl("where", REMAT_FN(where_meta_kernel));
  m.impl("masked_fill", REMAT_FN(masked_fill_meta_kernel));
  m.impl("add_", REMAT_FN(inplace_binary_meta_add));
  m.impl("mul_", REMAT_FN(inplace_binary_meta_mul));
  m.impl("add_.Scalar", REMAT_FN(add__scalar_meta));
  m.impl("mul_.Scalar", REMAT_FN(mul__scalar_meta));
  m.impl("relu_", REMAT_FN(relu__meta));
}

}  // namespace remat::ops
