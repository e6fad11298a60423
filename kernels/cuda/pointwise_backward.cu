// Mirrors ATen/native/cuda/ActivationThresholdKernel.cu, UnarySpecialOpsKernel.cu (sigmoid
// backward), ActivationSiluKernel.cu and ActivationGeluKernel.cu: the fused backward kernels,
// out = grad * f'(x), with the formulas of ops/pointwise.cpp's CPU kernels.
#include <limits>

#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/pointwise.h"
#include "kernels/gelu_constants.h"

namespace remat::kernels::cuda {

namespace {

using namespace gelu_constants;  // kernels/gelu_constants.h

template <class T, GradOp OP>
struct GradFunctor {
  double threshold;
  __device__ __forceinline__ T operator()(T grad, T input) const {
    using A = acc_t<T>;
    const A g = to_acc(grad), x = to_acc(input);
    if constexpr (OP == GradOp::Threshold) {
      // forward: y = x > threshold ? x : 0 (relu: threshold 0, applied to relu's output)
      return convert<T>(static_cast<double>(x) <= threshold ? A(0) : g);
    } else if constexpr (OP == GradOp::Sigmoid) {
      // forward: y = sigmoid(x), given y; dy/dx = y * (1 - y)
      return convert<T>(g * x * (A(1) - x));
    } else if constexpr (OP == GradOp::Tanh) {
      // forward: y = tanh(x), given y; dy/dx = 1 - y^2
      return convert<T>(g * (A(1) - x * x));
    } else if constexpr (OP == GradOp::Silu) {
      // forward: y = x * s, s = sigmoid(x); dy/dx = s * (1 + x * (1 - s))
      A s = A(1) / (A(1) + m_exp(-x));
      return convert<T>(g * s * (A(1) + x * (A(1) - s)));
    } else if constexpr (OP == GradOp::GeluTanh) {
      // forward: y = 0.5 x (1 + t), t = tanh(u), u = beta (x + kappa x^3)
      // dy/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) beta (1 + 3 kappa x^2)
      // As kernels/cpu/activation.h, with the constants folded as kernels/gelu_constants.h names
      // them: both terms from one exp, E = exp(-2u), r = 1 / (1 + E): 0.5 (1 + t) = r and
      // 1 - t^2 = 4 E r^2, with no cancellation where tanh saturates (|x| > 3). -2u is capped a
      // little below the log of A's largest value (E stays finite).
      const A x2 = x * x;
      const A cap = m_log(std::numeric_limits<A>::max()) - A(1);
      const A m2u = x * (A(kMinus2BetaKappa) * x2 + A(kMinus2Beta));
      const A e = m_exp(m2u < cap ? m2u : cap);
      const A r = A(1) / (A(1) + e);
      return convert<T>(g * (x * (A(k6BetaKappa) * x2 + A(k2Beta)) * (e * r * r) + r));
    } else {
      // forward: y = x Phi(x); dy/dx = Phi(x) + x phi(x)
      A cdf = A(0.5) * (A(1) + m_erf(x * A(kSqrt1_2)));
      A pdf = m_exp(A(-0.5) * x * x) * A(kInvSqrt2Pi);
      return convert<T>(g * (cdf + x * pdf));
    }
  }
};

template <GradOp OP>
void grad_typed(ScalarType dtype, const StridedLoop& loop, void* out, const void* grad, const void* x, double threshold,
                cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "backward", [&] {
    launch_elementwise<scalar_t, scalar_t, scalar_t>(loop, out, {grad, x}, GradFunctor<scalar_t, OP>{threshold},
                                                     stream);
  });
}

}  // namespace

void grad_map(GradOp op, ScalarType dtype, const StridedLoop& loop, void* out, const void* grad, const void* x,
              double threshold, cudaStream_t stream) {
  switch (op) {
    case GradOp::Threshold: return grad_typed<GradOp::Threshold>(dtype, loop, out, grad, x, threshold, stream);
    case GradOp::Sigmoid: return grad_typed<GradOp::Sigmoid>(dtype, loop, out, grad, x, threshold, stream);
    case GradOp::Tanh: return grad_typed<GradOp::Tanh>(dtype, loop, out, grad, x, threshold, stream);
    case GradOp::Silu: return grad_typed<GradOp::Silu>(dtype, loop, out, grad, x, threshold, stream);
    case GradOp::Gelu: return grad_typed<GradOp::Gelu>(dtype, loop, out, grad, x, threshold, stream);
    case GradOp::GeluTanh: return grad_typed<GradOp::GeluTanh>(dtype, loop, out, grad, x, threshold, stream);
  }
}

}  // namespace remat::kernels::cuda
