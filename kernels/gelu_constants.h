// Mirrors the constants of ATen/native/cpu/Activation.cpp's GeluKernelImpl and
// ATen/native/cuda/ActivationGeluKernel.cu (M_SQRT1_2, kBeta = M_SQRT2 * M_2_SQRTPI * 0.5, kKappa):
// named once for the CPU kernels (kernels/cpu/activation.h), the CPU's strided loops
// (ops/pointwise.cpp) and the CUDA kernels (kernels/cuda/pointwise_unary.cu, pointwise_backward.cu).
//
// The tanh form is computed everywhere as the sigmoid it is: 0.5 (1 + tanh(u)) = 1 / (1 + E),
// E = exp(-2u), u = beta (x + kappa x^3), with its constants folded:
//   y     = x / (1 + E),                         -2u    = x (kMinus2BetaKappa x^2 + kMinus2Beta)
//   dy/dx = r + x (2 du/dx) E r^2, r = 1/(1 + E), 2du/dx = k6BetaKappa x^2 + k2Beta
// No cancellation where tanh saturates (x < -3), which 1 + tanh(u) from a rounded tanh suffers.
#pragma once

namespace remat::kernels::gelu_constants {

constexpr double kSqrt1_2 = 0.70710678118654752440;     // 1/sqrt(2)
constexpr double kBeta = 0.79788456080286535588;        // sqrt(2/pi)
constexpr double kKappa = 0.044715;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/sqrt(2 pi)

constexpr double kMinus2Beta = -2 * kBeta;
constexpr double kMinus2BetaKappa = -2 * kBeta * kKappa;
constexpr double k2Beta = 2 * kBeta;
constexpr double k6BetaKappa = 6 * kBeta * kKappa;

}  // namespace remat::kernels::gelu_constants
