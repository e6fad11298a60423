// Mirrors ATen/native/cuda/{BinaryArithmeticKernel,UnaryOpsKernel,Activation*,CompareEQKernel,
// TensorCompare}.cu registration: the CUDA kernels of the elementwise ops of ops/pointwise.cpp,
// with the same meta functions (ops/meta.h) and the loops of kernels/cuda/pointwise.h.
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/pointwise.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// The CPU kernels' dtype errors ("\"aten::x\" not implemented for 'Bool'"), before any launch.
void require_numeric(ScalarType t, const char* op) {
  if (t == kBool) REMAT_DTYPE_ERROR(t, op);
}
void require_floating(ScalarType t, const char* op) {
  if (!isFloatingType(t)) REMAT_DTYPE_ERROR(t, op);
}

// ---------------------------------------------------------------------------------------------
// binary ops
// ---------------------------------------------------------------------------------------------

void binary_into(const char* op, kc::BinaryOp bop, const Tensor& out, const Tensor& a, const Tensor& b) {
  if (out.numel() == 0) return;
  require_numeric(out.dtype(), op);
  cuda::CUDAGuard guard(out.device());
  Tensor ac = cast_cuda(a, out.dtype()), bc = cast_cuda(b, out.dtype());
  kc::binary(bop, out.dtype(), cuda_loop(out, {&ac, &bc}), out.data_ptr(), ac.data_ptr(), bc.data_ptr(),
             cuda_stream(out.device()));
}

Tensor binary_cuda(const char* op, kc::BinaryOp bop, const TensorMeta& m, const Tensor& a, const Tensor& b) {
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  binary_into(op, bop, out, a, b);
  return out;
}

Tensor add_cuda(const Tensor& a, const Tensor& b) {
  return binary_cuda("aten::add", kc::BinaryOp::Add, binary_meta("aten::add", a, b), a, b);
}
Tensor sub_cuda(const Tensor& a, const Tensor& b) {
  return binary_cuda("aten::sub", kc::BinaryOp::Sub, binary_meta("aten::sub", a, b), a, b);
}
Tensor mul_cuda(const Tensor& a, const Tensor& b) {
  return binary_cuda("aten::mul", kc::BinaryOp::Mul, binary_meta("aten::mul", a, b), a, b);
}
// true division: integer inputs are divided in float (div_meta's result dtype)
Tensor div_cuda(const Tensor& a, const Tensor& b) {
  return binary_cuda("aten::div", kc::BinaryOp::Div, div_meta(a, b), a, b);
}

// tensor op scalar (the meta function decides the result dtype)
Tensor scalar_cuda(const char* op, kc::ScalarOp sop, const TensorMeta& m, const Tensor& a, double s) {
  require_numeric(m.dtype, op);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  if (out.numel() == 0) return out;
  Tensor ac = cast_cuda(a, out.dtype());
  kc::scalar_op(sop, out.dtype(), cuda_loop(out, {&ac}), out.data_ptr(), ac.data_ptr(), s, cuda_stream(m.device));
  return out;
}

Tensor add_scalar_cuda(const Tensor& a, double s) {
  return scalar_cuda("aten::add.Scalar", kc::ScalarOp::Add, scalar_meta("aten::add.Scalar", a, s), a, s);
}
Tensor mul_scalar_cuda(const Tensor& a, double s) {
  return scalar_cuda("aten::mul.Scalar", kc::ScalarOp::Mul, scalar_meta("aten::mul.Scalar", a, s), a, s);
}
Tensor div_scalar_cuda(const Tensor& a, double s) {
  return scalar_cuda("aten::div.Scalar", kc::ScalarOp::Div, scalar_meta("aten::div.Scalar", a, s, /*true_div=*/true),
                     a, s);
}
Tensor pow_cuda(const Tensor& a, double e) {
  TensorMeta m = pow_meta(a, e);
  return scalar_cuda("aten::pow", e == 2.0 ? kc::ScalarOp::Square : kc::ScalarOp::Pow, m, a, e);
}

// ---------------------------------------------------------------------------------------------
// unary ops
// ---------------------------------------------------------------------------------------------

Tensor unary_cuda(const char* op, kc::UnaryOp uop, const Tensor& a) {
  const bool floating_only = uop != kc::UnaryOp::Neg && uop != kc::UnaryOp::Abs && uop != kc::UnaryOp::Relu;
  TensorMeta m = unary_meta(op, a, floating_only);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  if (out.numel() == 0) return out;
  require_numeric(m.dtype, op);
  kc::unary(uop, out.dtype(), cuda_loop(out, {&a}), out.data_ptr(), a.data_ptr(), cuda_stream(m.device));
  return out;
}

#define REMAT_UNARY_CUDA(NAME, OP) \
  Tensor NAME##_cuda(const Tensor& a) { return unary_cuda("aten::" #NAME, kc::UnaryOp::OP, a); }
REMAT_UNARY_CUDA(neg, Neg)
REMAT_UNARY_CUDA(exp, Exp)
REMAT_UNARY_CUDA(log, Log)
REMAT_UNARY_CUDA(sin, Sin)
REMAT_UNARY_CUDA(cos, Cos)
REMAT_UNARY_CUDA(tanh, Tanh)
REMAT_UNARY_CUDA(sigmoid, Sigmoid)
REMAT_UNARY_CUDA(relu, Relu)
REMAT_UNARY_CUDA(silu, Silu)
REMAT_UNARY_CUDA(sqrt, Sqrt)
REMAT_UNARY_CUDA(rsqrt, Rsqrt)
REMAT_UNARY_CUDA(abs, Abs)
#undef REMAT_UNARY_CUDA

Tensor gelu_cuda(const Tensor& a, const std::string& approximate) {
  check_gelu_approximate(approximate);
  return unary_cuda("aten::gelu", approximate == "tanh" ? kc::UnaryOp::GeluTanh : kc::UnaryOp::Gelu, a);
}

// ---------------------------------------------------------------------------------------------
// fused backward kernels: grad_input = grad * f'(x)
// ---------------------------------------------------------------------------------------------

Tensor grad_map_cuda(const char* op, kc::GradOp gop, const Tensor& grad, const Tensor& x, double threshold = 0.0) {
  TensorMeta m = binary_meta(op, grad, x);
  require_floating(m.dtype, op);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  if (out.numel() == 0) return out;
  Tensor gc = cast_cuda(grad, m.dtype), xc = cast_cuda(x, m.dtype);
  kc::grad_map(gop, m.dtype, cuda_loop(out, {&gc, &xc}), out.data_ptr(), gc.data_ptr(), xc.data_ptr(), threshold,
               cuda_stream(m.device));
  return out;
}

Tensor threshold_backward_cuda(const Tensor& grad, const Tensor& self, double threshold) {
  return grad_map_cuda("aten::threshold_backward", kc::GradOp::Threshold, grad, self, threshold);
}
Tensor sigmoid_backward_cuda(const Tensor& grad, const Tensor& out) {
  return grad_map_cuda("aten::sigmoid_backward", kc::GradOp::Sigmoid, grad, out);
}
Tensor tanh_backward_cuda(const Tensor& grad, const Tensor& out) {
  return grad_map_cuda("aten::tanh_backward", kc::GradOp::Tanh, grad, out);
}
Tensor silu_backward_cuda(const Tensor& grad, const Tensor& self) {
  return grad_map_cuda("aten::silu_backward", kc::GradOp::Silu, grad, self);
}
Tensor gelu_backward_cuda(const Tensor& grad, const Tensor& self, const std::string& approximate) {
  check_gelu_approximate(approximate);
  return grad_map_cuda("aten::gelu_backward", approximate == "tanh" ? kc::GradOp::GeluTanh : kc::GradOp::Gelu, grad,
                       self);
}

// ---------------------------------------------------------------------------------------------
// eq, where, masked_fill
// ---------------------------------------------------------------------------------------------

Tensor eq_cuda(const Tensor& a, const Tensor& b) {
  TensorMeta m = binary_meta("aten::eq", a, b);
  cuda::CUDAGuard guard(m.device);
  Tensor out = make_empty(m.sizes, kBool, m.device);
  if (out.numel() == 0) return out;
  Tensor ac = cast_cuda(a, m.dtype), bc = cast_cuda(b, m.dtype);
  kc::eq(m.dtype, cuda_loop(out, {&ac, &bc}), static_cast<bool*>(out.data_ptr()), ac.data_ptr(), bc.data_ptr(),
         cuda_stream(m.device));
  return out;
}

Tensor where_cuda(const Tensor& cond, const Tensor& a, const Tensor& b) {
  TensorMeta m = where_meta(cond, a, b);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  if (out.numel() == 0) return out;
  Tensor ac = cast_cuda(a, m.dtype), bc = cast_cuda(b, m.dtype);
  kc::where(m.dtype, cuda_loop(out, {&cond, &ac, &bc}), out.data_ptr(), static_cast<const bool*>(cond.data_ptr()),
            ac.data_ptr(), bc.data_ptr(), cuda_stream(m.device));
  return out;
}

Tensor masked_fill_cuda(const Tensor& self, const Tensor& mask, double value) {
  TensorMeta m = masked_fill_meta(self, mask);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  if (out.numel() == 0) return out;
  kc::masked_fill(m.dtype, cuda_loop(out, {&self, &mask}), out.data_ptr(), self.data_ptr(),
                  static_cast<const bool*>(mask.data_ptr()), value, cuda_stream(m.device));
  return out;
}

// ---------------------------------------------------------------------------------------------
// in-place ops: write into self, bump its version
// ---------------------------------------------------------------------------------------------

Tensor add__cuda(const Tensor& self, const Tensor& other) {
  inplace_meta("aten::add_", self, other);
  binary_into("aten::add_", kc::BinaryOp::Add, self, self, other);
  self.impl()->bump_version();
  return self;
}
Tensor mul__cuda(const Tensor& self, const Tensor& other) {
  inplace_meta("aten::mul_", self, other);
  binary_into("aten::mul_", kc::BinaryOp::Mul, self, self, other);
  self.impl()->bump_version();
  return self;
}

Tensor inplace_scalar_cuda(const char* op, kc::ScalarOp sop, const Tensor& self, double s) {
  check_inplace_scalar(op, self, s);
  if (self.numel() > 0) {
    require_numeric(self.dtype(), op);
    cuda::CUDAGuard guard(self.device());
    kc::scalar_op(sop, self.dtype(), cuda_loop(self, {&self}), self.data_ptr(), self.data_ptr(), s,
                  cuda_stream(self.device()));
  }
  self.impl()->bump_version();
  return self;
}
Tensor add__scalar_cuda(const Tensor& self, double s) {
  return inplace_scalar_cuda("aten::add_.Scalar", kc::ScalarOp::Add, self, s);
}
Tensor mul__scalar_cuda(const Tensor& self, double s) {
  return inplace_scalar_cuda("aten::mul_.Scalar", kc::ScalarOp::Mul, self, s);
}
Tensor relu__cuda(const Tensor& self) {
  check_defined("aten::relu_", self, "self");
  check_no_internal_overlap("aten::relu_", self);
  if (self.numel() > 0) {
    require_numeric(self.dtype(), "aten::relu_");
    cuda::CUDAGuard guard(self.device());
    kc::unary(kc::UnaryOp::Relu, self.dtype(), cuda_loop(self, {&self}), self.data_ptr(), self.data_ptr(),
              cuda_stream(self.device()));
  }
  self.impl()->bump_version();
  return self;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("add", REMAT_FN(add_cuda));
  m.impl("sub", REMAT_FN(sub_cuda));
  m.impl("mul", REMAT_FN(mul_cuda));
  m.impl("div", REMAT_FN(div_cuda));
  m.impl("add.Scalar", REMAT_FN(add_scalar_cuda));
  m.impl("mul.Scalar", REMAT_FN(mul_scalar_cuda));
  m.impl("div.Scalar", REMAT_FN(div_scalar_cuda));
  m.impl("pow", REMAT_FN(pow_cuda));
  m.impl("neg", REMAT_FN(neg_cuda));
  m.impl("exp", REMAT_FN(exp_cuda));
  m.impl("log", REMAT_FN(log_cuda));
  m.impl("sin", REMAT_FN(sin_cuda));
  m.impl("cos", REMAT_FN(cos_cuda));
  m.impl("tanh", REMAT_FN(tanh_cuda));
  m.impl("sigmoid", REMAT_FN(sigmoid_cuda));
  m.impl("relu", REMAT_FN(relu_cuda));
  m.impl("silu", REMAT_FN(silu_cuda));
  m.impl("sqrt", REMAT_FN(sqrt_cuda));
  m.impl("rsqrt", REMAT_FN(rsqrt_cuda));
  m.impl("abs", REMAT_FN(abs_cuda));
  m.impl("gelu", REMAT_FN(gelu_cuda));
  m.impl("threshold_backward", REMAT_FN(threshold_backward_cuda));
  m.impl("sigmoid_backward", REMAT_FN(sigmoid_backward_cuda));
  m.impl("tanh_backward", REMAT_FN(tanh_backward_cuda));
  m.impl("silu_backward", REMAT_FN(silu_backward_cuda));
  m.impl("gelu_backward", REMAT_FN(gelu_backward_cuda));
  m.impl("eq", REMAT_FN(eq_cuda));
  m.impl("where", REMAT_FN(where_cuda));
  m.impl("masked_fill", REMAT_FN(masked_fill_cuda));
  m.impl("add_", REMAT_FN(add__cuda));
  m.impl("mul_", REMAT_FN(mul__cuda));
  m.impl("add_.Scalar", REMAT_FN(add__scalar_cuda));
  m.impl("mul_.Scalar", REMAT_FN(mul__scalar_cuda));
  m.impl("relu_", REMAT_FN(relu__cuda));
}

}  // namespace remat::ops
