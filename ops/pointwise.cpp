// Mirrors the CPU TORCH_IMPL_FUNCs of ATen/native/BinaryOps.cpp, UnaryOps.cpp, Activation.cpp,
// TensorCompare.cpp, PointwiseOps.cpp and Lerp.cpp (their loops: ATen/native/cpu/*Kernel.cpp, here
// kernels/cpu/pointwise.h and pointwise_ops.h): one out= kernel per elementwise op of
// ops/pointwise.def, registered at the CPU key from that table. The meta function has run when a
// kernel starts (ops/structured.h), and out is not empty.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/dispatch/library.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/complex.h"
#include "kernels/cpu/pointwise.h"
#include "kernels/cpu/pointwise_ops.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/pointwise_defs.h"
#include "ops/structured.h"

namespace remat::ops {
namespace {

namespace cpu = kernels::cpu;
namespace gelu = kernels::gelu_constants;

// ---------------------------------------------------------------------------------------------
// the table's kinds: unary, binary, tensor op scalar
// ---------------------------------------------------------------------------------------------

template <class Op>
void unary_cpu(const char* op, const Tensor& out, const Tensor& a) {
  auto loop = make_loop(out, {&a});
  REMAT_DISPATCH_NUMERIC_TYPES(out.dtype(), op, [&] {
    cpu::unary_kernel<Op, scalar_t>(loop, out.data_ptr<scalar_t>(), a.data_ptr<scalar_t>());
  });
}

// mul of complex tensors (the one binary op that takes them: ops/pointwise_defs.h), both of out's dtype.
void complex_mul_cpu(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  REMAT_CHECK(a.dtype() == out.dtype() && b.dtype() == out.dtype(), op, ": complex operands must have one dtype (got ",
              toString(a.dtype()), " and ", toString(b.dtype()), ")");
  auto loop = make_loop(out, {&a, &b});
  if (out.dtype() == kComplexFloat) {
    cpu::complex_mul_kernel(loop, out.data_ptr<std::complex<float>>(), a.data_ptr<std::complex<float>>(),
                            b.data_ptr<std::complex<float>>());
  } else {
    cpu::complex_mul_kernel(loop, out.data_ptr<std::complex<double>>(), a.data_ptr<std::complex<double>>(),
                            b.data_ptr<std::complex<double>>());
  }
}

template <class Op>
void binary_cpu(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  const ScalarType dt = out.dtype();
  if constexpr (std::is_same_v<Op, cpu::MulOp>) {
    if (isComplexType(dt)) return complex_mul_cpu(op, out, a, b);
  }
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
  REMAT_DISPATCH_NUMERIC_TYPES(dt, op, [&] {
    cpu::binary_kernel<Op, scalar_t>(loop, out.data_ptr<scalar_t>(), ac.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>());
  });
}

// f(x): one element, in the accumulation type.
template <class F>
void map_scalar_cpu(const char* op, const Tensor& out, const Tensor& a, const F& f) {
  Tensor ac = cast_cpu(a, out.dtype());
  auto loop = make_loop(out, {&ac});
  REMAT_DISPATCH_NUMERIC_TYPES(out.dtype(), op, [&] {
    cpu::unary_scalar_kernel(loop, out.data_ptr<scalar_t>(), ac.data_ptr<scalar_t>(), [&](auto x) { return f(x); });
  });
}

// The scalar is converted to the accumulation type first (a "wrapped number").
template <class Op>
void scalar_cpu(const char* op, const Tensor& out, const Tensor& a, double s) {
  Tensor ac = cast_cpu(a, out.dtype());
  auto loop = make_loop(out, {&ac});
  REMAT_DISPATCH_NUMERIC_TYPES(out.dtype(), op, [&] {
    cpu::scalar_op_kernel<Op>(loop, out.data_ptr<scalar_t>(), ac.data_ptr<scalar_t>(),
                              static_cast<cpu::acc_t<scalar_t>>(s));
  });
}

// ---------------------------------------------------------------------------------------------
// ops with arguments of their own
// ---------------------------------------------------------------------------------------------

void pow_cpu(const char* op, const Tensor& out, const Tensor& a, double e) {
  // PyTorch's special cases, so that the values are its own (pow_Tensor_Scalar copies for 1;
  // PowKernel.cpp: x^2, x^3 and 1 / x^2 as products, and in float, double and bfloat16 sqrt, rsqrt
  // and the reciprocal for 0.5, -0.5 and -1). They part from std::pow at signed zeros and -inf:
  // std::pow(-0, 0.5) is +0 and std::pow(-inf, 0.5) +inf, where sqrt gives -0 and NaN; for -0.5,
  // +inf and +0 against -inf and NaN. x^2 is RMSNorm's composite's, x^1 its backward's (PowBackward0:
  // e * x^(e-1)). std::pow is scalar.
  if (e == 2.0) return map_scalar_cpu(op, out, a, [](auto x) { return x * x; });
  if (e == 1.0) return map_scalar_cpu(op, out, a, [](auto x) { return x; });
  const ScalarType dt = out.dtype();
  if (dt == kFloat || dt == kDouble || dt == kBFloat16) {
    if (e == 0.5) return unary_cpu<cpu::SqrtOp>(op, out, cast_cpu(a, dt));    // sqrt's own kernel, as PyTorch's
    if (e == -0.5) return unary_cpu<cpu::RsqrtOp>(op, out, cast_cpu(a, dt));  // rsqrt's
    if (e == -1.0) return map_scalar_cpu(op, out, a, [](auto x) { return decltype(x)(1) / x; });
    if (e == 3.0) return map_scalar_cpu(op, out, a, [](auto x) { return x * x * x; });
    if (e == -2.0) return map_scalar_cpu(op, out, a, [](auto x) { return decltype(x)(1) / (x * x); });
  }
  map_scalar_cpu(op, out, a, [e](auto x) { return std::pow(x, static_cast<decltype(x)>(e)); });
}

void gelu_cpu(const char* op, const Tensor& out, const Tensor& a, const std::string& approximate) {
  const bool tanh_form = approximate == "tanh";
  auto loop = make_loop(out, {&a});
  REMAT_DISPATCH_FLOATING_TYPES(out.dtype(), op, [&] {
    if constexpr (cpu::kEigenVectorizable<scalar_t> || cpu::kFloatBlocks<scalar_t>) {
      if (loop.is_contiguous()) {
        cpu::gelu_contiguous(out.data_ptr<scalar_t>(), a.data_ptr<scalar_t>(), out.numel(), tanh_form);
        return;
      }
    }
    cpu::unary_scalar_kernel(loop, out.data_ptr<scalar_t>(), a.data_ptr<scalar_t>(), [tanh_form](auto x) {
      using T = decltype(x);
      if (tanh_form) {
        // the contiguous kernels' formula (kernels/gelu_constants.h): x / (1 + exp(-2u)), where
        // 0.5 x (1 + tanh(u)) lost digits for x < -3 (a strided input got other values than its
        // contiguous copy: 2.8e-4 relative near x = -6 in float)
        return x / (T(1) + std::exp(x * (T(gelu::kMinus2BetaKappa) * x * x + T(gelu::kMinus2Beta))));
      }
      return x * T(0.5) * (T(1) + std::erf(x * T(gelu::kSqrt1_2)));
    });
  });
}

template <bool kMax>
void extremum_cpu(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  Tensor ac = cast_cpu(a, out.dtype()), bc = cast_cpu(b, out.dtype());
  auto loop = make_loop(out, {&ac, &bc});
  REMAT_DISPATCH_ALL_TYPES(out.dtype(), op, [&] {
    cpu::extremum_kernel<scalar_t, kMax>(loop, out.data_ptr<scalar_t>(), ac.data_ptr<scalar_t>(),
                                         bc.data_ptr<scalar_t>());
  });
}
constexpr auto maximum_cpu = &extremum_cpu<true>;
constexpr auto minimum_cpu = &extremum_cpu<false>;

void eq_cpu(const char* op, const Tensor& out, const Tensor& a, const Tensor& b) {
  const ScalarType common = promoteTypes(a.dtype(), b.dtype());  // compared in the promoted dtype
  Tensor ac = cast_cpu(a, common), bc = cast_cpu(b, common);
  auto loop = make_loop(out, {&ac, &bc});
  REMAT_DISPATCH_ALL_TYPES(common, op, [&] {
    cpu::binary_map(loop, out.data_ptr<bool>(), ac.data_ptr<scalar_t>(), bc.data_ptr<scalar_t>(),
                    [](scalar_t x, scalar_t y) {
                      using A = cpu::acc_t<scalar_t>;
                      return static_cast<A>(x) == static_cast<A>(y);
                    });
  });
}

// A bool tensor's elements as bytes (0 or 1), for loops the compiler should vectorise.
const uint8_t* mask_bytes(const Tensor& mask) { return reinterpret_cast<const uint8_t*>(mask.data_ptr<bool>()); }

void where_cpu(const char* op, const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor ac = cast_cpu(a, out.dtype()), bc = cast_cpu(b, out.dtype());
  auto loop = make_loop(out, {&cond, &ac, &bc});
  REMAT_DISPATCH_ALL_TYPES(out.dtype(), op, [&] {
    cpu::ternary_map(loop, out.data_ptr<scalar_t>(), mask_bytes(cond), ac.data_ptr<scalar_t>(),
                     bc.data_ptr<scalar_t>(), [](uint8_t c, scalar_t x, scalar_t y) { return c ? x : y; });
  });
}

void masked_fill_cpu(const char* op, const Tensor& out, const Tensor& self, const Tensor& mask, double value) {
  auto loop = make_loop(out, {&self, &mask});
  REMAT_DISPATCH_ALL_TYPES(out.dtype(), op, [&] {
    scalar_t v = static_cast<scalar_t>(value);
    // The mask read as bytes: the compiler has no vector type for bool, so a bool loop stays scalar.
    if constexpr (sizeof(scalar_t) == 2 && !std::is_integral_v<scalar_t>) {
      // bfloat16 and half as their bits: a select of uint16_t vectorises, one of a struct does not
      uint16_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      cpu::binary_map(loop, static_cast<uint16_t*>(out.data_ptr()), static_cast<const uint16_t*>(self.data_ptr()),
                      mask_bytes(mask), [bits](uint16_t x, uint8_t m) { return m ? bits : x; });
    } else {
      cpu::binary_map(loop, out.data_ptr<scalar_t>(), self.data_ptr<scalar_t>(), mask_bytes(mask),
                      [v](scalar_t x, uint8_t m) { return m ? v : x; });
    }
  });
}

// ---------------------------------------------------------------------------------------------
// fused backward kernels: grad_input = f(grad_output, x), in the accumulation type
// ---------------------------------------------------------------------------------------------

template <class F>
void grad_map_cpu(const char* op, const Tensor& out, const Tensor& grad, const Tensor& x, const F& f) {
  Tensor gc = cast_cpu(grad, out.dtype()), xc = cast_cpu(x, out.dtype());
  auto loop = make_loop(out, {&gc, &xc});
  REMAT_DISPATCH_FLOATING_TYPES(out.dtype(), op, [&] {
    cpu::binary_map(loop, out.data_ptr<scalar_t>(), gc.data_ptr<scalar_t>(), xc.data_ptr<scalar_t>(),
                    [&](scalar_t g, scalar_t v) {
                      using A = cpu::acc_t<scalar_t>;
                      return scalar_t(f(A(g), A(v)));
                    });
  });
}

void threshold_backward_cpu(const char* op, const Tensor& out, const Tensor& grad, const Tensor& self,
                            double threshold) {
  grad_map_cpu(op, out, grad, self, [threshold](auto g, auto x) { return x <= threshold ? decltype(g)(0) : g; });
}
void sigmoid_backward_cpu(const char* op, const Tensor& out, const Tensor& grad, const Tensor& y) {
  // forward: y = sigmoid(x); dy/dx = y * (1 - y)
  grad_map_cpu(op, out, grad, y, [](auto g, auto y) { return g * y * (decltype(y)(1) - y); });
}
void tanh_backward_cpu(const char* op, const Tensor& out, const Tensor& grad, const Tensor& y) {
  // forward: y = tanh(x); dy/dx = 1 - y^2
  grad_map_cpu(op, out, grad, y, [](auto g, auto y) { return g * (decltype(y)(1) - y * y); });
}
void silu_backward_cpu(const char* op, const Tensor& out, const Tensor& grad, const Tensor& self) {
  const ScalarType dt = out.dtype();
  if ((dt == kFloat || dt == kDouble || dt == kBFloat16) && grad.dtype() == dt && self.dtype() == dt &&
      grad.sizes() == out.sizes() && self.sizes() == out.sizes() && grad.is_contiguous() && self.is_contiguous()) {
    REMAT_DISPATCH_FLOATING_TYPES(dt, op, [&] {
      if constexpr (cpu::kEigenVectorizable<scalar_t> || cpu::kFloatBlocks<scalar_t>)
        cpu::silu_backward_contiguous(out.data_ptr<scalar_t>(), grad.data_ptr<scalar_t>(), self.data_ptr<scalar_t>(),
                                      out.numel());
    });
    return;
  }
  // forward: y = x * s, s = sigmoid(x); dy/dx = s * (1 + x * (1 - s))
  grad_map_cpu(op, out, grad, self, [](auto g, auto x) {
    using T = decltype(x);
    T s = T(1) / (T(1) + std::exp(-x));
    return g * s * (T(1) + x * (T(1) - s));
  });
}
void gelu_backward_cpu(const char* op, const Tensor& out, const Tensor& grad, const Tensor& self,
                       const std::string& approximate) {
  const bool tanh_form = approximate == "tanh";
  const ScalarType dt = out.dtype();
  if ((dt == kFloat || dt == kDouble || dt == kBFloat16) && grad.dtype() == dt && self.dtype() == dt &&
      grad.sizes() == out.sizes() && self.sizes() == out.sizes() && grad.is_contiguous() && self.is_contiguous()) {
    REMAT_DISPATCH_FLOATING_TYPES(dt, op, [&] {
      if constexpr (cpu::kEigenVectorizable<scalar_t> || cpu::kFloatBlocks<scalar_t>)
        cpu::gelu_backward_contiguous(out.data_ptr<scalar_t>(), grad.data_ptr<scalar_t>(),
                                      self.data_ptr<scalar_t>(), out.numel(), tanh_form);
    });
    return;
  }
  grad_map_cpu(op, out, grad, self, [tanh_form](auto g, auto x) {
    using T = decltype(x);
    if (tanh_form) {
      // forward: y = 0.5 x (1 + tanh(u)), u = beta (x + kappa x^3); the formula of the contiguous
      // kernel (kernels/cpu/activation.h, kernels/gelu_constants.h): one exp, no cancellation
      // where tanh saturates
      const T x2 = x * x;
      const T cap = std::log(std::numeric_limits<T>::max()) - T(1);
      const T e = std::exp(std::min(x * (T(gelu::kMinus2BetaKappa) * x2 + T(gelu::kMinus2Beta)), cap));
      const T r = T(1) / (T(1) + e);
      return g * (x * (T(gelu::k6BetaKappa) * x2 + T(gelu::k2Beta)) * (e * r * r) + r);
    }
    // forward: y = x Phi(x); dy/dx = Phi(x) + x phi(x)
    T cdf = T(0.5) * (T(1) + std::erf(x * T(gelu::kSqrt1_2)));
    T pdf = std::exp(T(-0.5) * x * x) * T(gelu::kInvSqrt2Pi);
    return g * (cdf + x * pdf);
  });
}

// ---------------------------------------------------------------------------------------------
// the optimizers' updates, in place: out is self
// ---------------------------------------------------------------------------------------------

// self += value * t1 (* or /) t2
template <bool kDivide>
void addc_cpu(const char* op, const Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
              double value) {
  Tensor a = cast_cpu(t1, self.dtype()), b = cast_cpu(t2, self.dtype());
  auto loop = make_loop(out, {&self, &a, &b});
  REMAT_DISPATCH_FLOATING_TYPES(self.dtype(), op, [&] {
    if constexpr (kDivide) {
      cpu::addcdiv_kernel(loop, out.data_ptr<scalar_t>(), self.data_ptr<scalar_t>(), a.data_ptr<scalar_t>(),
                          b.data_ptr<scalar_t>(), value);
    } else {
      cpu::addcmul_kernel(loop, out.data_ptr<scalar_t>(), self.data_ptr<scalar_t>(), a.data_ptr<scalar_t>(),
                          b.data_ptr<scalar_t>(), value);
    }
  });
}
constexpr auto addcmul_cpu = &addc_cpu<false>;
constexpr auto addcdiv_cpu = &addc_cpu<true>;

// self += weight * (end - self)
void lerp_cpu(const char* op, const Tensor& out, const Tensor& self, const Tensor& end, double weight) {
  Tensor e = cast_cpu(end, self.dtype());
  auto loop = make_loop(out, {&self, &e});
  REMAT_DISPATCH_FLOATING_TYPES(self.dtype(), op, [&] {
    cpu::lerp_kernel(loop, out.data_ptr<scalar_t>(), self.data_ptr<scalar_t>(), e.data_ptr<scalar_t>(), weight);
  });
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  using structured::CPUBackend;
  using structured::impl;
#define REMAT_UNARY(NAME, NEEDS_FLOAT, CPU_OP, CUDA_OP, VARIANTS) \
  impl<structured_##NAME, CPUBackend, &unary_cpu<cpu::CPU_OP>>(m);
#define REMAT_BINARY(NAME, META, CPU_OP, CUDA_OP, VARIANTS) \
  impl<structured_##NAME, CPUBackend, &binary_cpu<cpu::CPU_OP>>(m);
#define REMAT_SCALAR(NAME, META, CPU_OP, CUDA_OP, VARIANTS) \
  impl<structured_##NAME##_Scalar, CPUBackend, &scalar_cpu<cpu::CPU_OP>>(m);
#define REMAT_POINTWISE(NAME, SCHEMA, SIGNATURE, META, CPU_IMPL, CUDA_IMPL) \
  impl<structured_##NAME, CPUBackend, CPU_IMPL>(m);
#define REMAT_POINTWISE_INPLACE(NAME, OVERLOAD, SCHEMA, SIGNATURE, META, CPU_IMPL, CUDA_IMPL) \
  impl<structured_##NAME##_, CPUBackend, CPU_IMPL>(m);
#include "ops/pointwise.def"
}

}  // namespace remat::ops
