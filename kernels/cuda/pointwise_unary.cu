// Mirrors ATen/native/cuda/UnaryOpsKernel.cu, ActivationGeluKernel.cu, PowKernel.cu: unary ops
// and tensor-op-scalar ops (same formulas as kernels/cpu/pointwise.h and ops/pointwise.cpp).
#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/pointwise.h"
#include "kernels/gelu_constants.h"

namespace remat::kernels::cuda {

namespace {

using namespace gelu_constants;  // kernels/gelu_constants.h

template <UnaryOp OP, class A>
__device__ __forceinline__ A unary_fn(A x) {
  if constexpr (OP == UnaryOp::Neg) return -x;
  else if constexpr (OP == UnaryOp::Exp) return m_exp(x);
  else if constexpr (OP == UnaryOp::Log) return m_log(x);
  else if constexpr (OP == UnaryOp::Sin) return m_sin(x);
  else if constexpr (OP == UnaryOp::Cos) return m_cos(x);
  else if constexpr (OP == UnaryOp::Tanh) return m_tanh(x);
  else if constexpr (OP == UnaryOp::Sigmoid) return A(1) / (A(1) + m_exp(-x));
  else if constexpr (OP == UnaryOp::Relu) return x < A(0) ? A(0) : x;  // NaN and -0 as they are (PyTorch's)
  else if constexpr (OP == UnaryOp::Silu) return x / (A(1) + m_exp(-x));
  else if constexpr (OP == UnaryOp::Sqrt) return m_sqrt(x);
  else if constexpr (OP == UnaryOp::Rsqrt) return A(1) / m_sqrt(x);
  else if constexpr (OP == UnaryOp::Abs) return m_abs(x);
  else if constexpr (OP == UnaryOp::Gelu) return x * A(0.5) * (A(1) + m_erf(x * A(kSqrt1_2)));
  else {  // GeluTanh: 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), as kernels/cpu/activation.h computes
    // it: no cancellation where tanh saturates (x < -3); exp overflows to inf past x of about -10
    // (float), giving -0, and NaN at x = -inf, as the tanh formula does
    const A minus_2u = x * (A(kMinus2BetaKappa) * x * x + A(kMinus2Beta));
    return x / (A(1) + m_exp(minus_2u));
  }
}

template <class T, UnaryOp OP>
struct UnaryFunctor {
  __device__ __forceinline__ T operator()(T x) const { return convert<T>(unary_fn<OP>(to_acc(x))); }
};

template <UnaryOp OP>
void unary_typed(ScalarType dtype, const StridedLoop& loop, void* out, const void* in, cudaStream_t stream) {
  if constexpr (OP == UnaryOp::Neg || OP == UnaryOp::Abs || OP == UnaryOp::Relu) {
    REMAT_CUDA_DISPATCH_NUMERIC(dtype, "unary", [&] {
      launch_elementwise<scalar_t, scalar_t>(loop, out, {in}, UnaryFunctor<scalar_t, OP>{}, stream);
    });
  } else {
    REMAT_CUDA_DISPATCH_FLOATING(dtype, "unary", [&] {
      launch_elementwise<scalar_t, scalar_t>(loop, out, {in}, UnaryFunctor<scalar_t, OP>{}, stream);
    });
  }
}

template <class T, ScalarOp OP>
struct ScalarFunctor {
  acc_t<T> s;
  __device__ __forceinline__ T operator()(T x) const {
    using A = acc_t<T>;
    A v = to_acc(x);
    if constexpr (OP == ScalarOp::Add) return convert<T>(v + s);
    else if constexpr (OP == ScalarOp::Mul) return convert<T>(v * s);
    else if constexpr (OP == ScalarOp::Div) return convert<T>(v / s);
    else if constexpr (OP == ScalarOp::Square) return convert<T>(v * v);
    else {  // PowKernel.cu's special cases, as ops/pointwise.cpp's pow_cpu takes them (values at -0 and -inf)
      if (s == A(0.5)) return convert<T>(m_sqrt(v));
      if (s == A(-0.5)) return convert<T>(A(1) / m_sqrt(v));
      if (s == A(-1)) return convert<T>(A(1) / v);
      if (s == A(3)) return convert<T>(v * v * v);
      if (s == A(-2)) return convert<T>(A(1) / (v * v));
      return convert<T>(m_pow(v, s));
    }
  }
};

template <ScalarOp OP>
void scalar_typed(ScalarType dtype, const StridedLoop& loop, void* out, const void* in, double s, cudaStream_t stream) {
  if constexpr (OP == ScalarOp::Pow || OP == ScalarOp::Square) {
    REMAT_CUDA_DISPATCH_FLOATING(dtype, "pow", [&] {
      ScalarFunctor<scalar_t, OP> f{static_cast<acc_t<scalar_t>>(s)};
      launch_elementwise<scalar_t, scalar_t>(loop, out, {in}, f, stream);
    });
  } else {
    REMAT_CUDA_DISPATCH_NUMERIC(dtype, "scalar op", [&] {
      ScalarFunctor<scalar_t, OP> f{static_cast<acc_t<scalar_t>>(s)};
      launch_elementwise<scalar_t, scalar_t>(loop, out, {in}, f, stream);
    });
  }
}

}  // namespace

void unary(UnaryOp op, ScalarType dtype, const StridedLoop& loop, void* out, const void* in, cudaStream_t stream) {
  switch (op) {
    case UnaryOp::Neg: return unary_typed<UnaryOp::Neg>(dtype, loop, out, in, stream);
    case UnaryOp::Exp: return unary_typed<UnaryOp::Exp>(dtype, loop, out, in, stream);
    case UnaryOp::Log: return unary_typed<UnaryOp::Log>(dtype, loop, out, in, stream);
    case UnaryOp::Sin: return unary_typed<UnaryOp::Sin>(dtype, loop, out, in, stream);
    case UnaryOp::Cos: return unary_typed<UnaryOp::Cos>(dtype, loop, out, in, stream);
    case UnaryOp::Tanh: return unary_typed<UnaryOp::Tanh>(dtype, loop, out, in, stream);
    case UnaryOp::Sigmoid: return unary_typed<UnaryOp::Sigmoid>(dtype, loop, out, in, stream);
    case UnaryOp::Relu: return unary_typed<UnaryOp::Relu>(dtype, loop, out, in, stream);
    case UnaryOp::Silu: return unary_typed<UnaryOp::Silu>(dtype, loop, out, in, stream);
    case UnaryOp::Sqrt: return unary_typed<UnaryOp::Sqrt>(dtype, loop, out, in, stream);
    case UnaryOp::Rsqrt: return unary_typed<UnaryOp::Rsqrt>(dtype, loop, out, in, stream);
    case UnaryOp::Abs: return unary_typed<UnaryOp::Abs>(dtype, loop, out, in, stream);
    case UnaryOp::Gelu: return unary_typed<UnaryOp::Gelu>(dtype, loop, out, in, stream);
    case UnaryOp::GeluTanh: return unary_typed<UnaryOp::GeluTanh>(dtype, loop, out, in, stream);
  }
}

void scalar_op(ScalarOp op, ScalarType dtype, const StridedLoop& loop, void* out, const void* in, double s,
               cudaStream_t stream) {
  switch (op) {
    case ScalarOp::Add: return scalar_typed<ScalarOp::Add>(dtype, loop, out, in, s, stream);
    case ScalarOp::Mul: return scalar_typed<ScalarOp::Mul>(dtype, loop, out, in, s, stream);
    case ScalarOp::Div: return scalar_typed<ScalarOp::Div>(dtype, loop, out, in, s, stream);
    case ScalarOp::Pow: return scalar_typed<ScalarOp::Pow>(dtype, loop, out, in, s, stream);
    case ScalarOp::Square: return scalar_typed<ScalarOp::Square>(dtype, loop, out, in, s, stream);
  }
}

}  // namespace remat::kernels::cuda
