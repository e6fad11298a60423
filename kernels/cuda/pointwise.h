// Mirrors ATen/native/cuda/{UnaryOpsKernel,BinaryArithmeticKernel,ActivationGeluKernel,
// ActivationSiluKernel,...}.cu: the elementwise kernels, with host launchers over raw pointers.
//
// Every launcher takes a StridedLoop (kernels/cuda/loop.h: output operand first, then the
// inputs in argument order; stride 0 broadcasts) and the element-0 pointers, and runs on
// `stream`. Operands have the same dtype unless a comment says otherwise; 16-bit floats
// compute in float and round once, as the CPU kernels do.
#pragma once

#include <cuda_runtime_api.h>

#include "engine/core/scalar_type.h"
#include "kernels/cuda/loop.h"

namespace remat::kernels::cuda {

// out = op(in). Neg, Abs and Relu also take Long; the rest floating types.
enum class UnaryOp { Neg, Exp, Log, Sin, Cos, Tanh, Sigmoid, Relu, Silu, Sqrt, Rsqrt, Abs, Gelu, GeluTanh };
void unary(UnaryOp op, ScalarType dtype, const StridedLoop& loop, void* out, const void* in, cudaStream_t stream);

// out = in op s, with s converted to the accumulation type first (a "wrapped number").
// Square is pow(in, 2) (computed as in * in); Pow is pow(in, s) (floating types only).
enum class ScalarOp { Add, Mul, Div, Pow, Square };
void scalar_op(ScalarOp op, ScalarType dtype, const StridedLoop& loop, void* out, const void* in, double s,
               cudaStream_t stream);

// out = a op b (numeric types; Long division truncates, as on CPU).
enum class BinaryOp { Add, Sub, Mul, Div };
void binary(BinaryOp op, ScalarType dtype, const StridedLoop& loop, void* out, const void* a, const void* b,
            cudaStream_t stream);

// Fused backward kernels: out = grad * f'(x) (floating types). Threshold: grad where
// x > threshold, else 0 (relu's backward); Sigmoid/Tanh take the forward's output y.
enum class GradOp { Threshold, Sigmoid, Tanh, Silu, Gelu, GeluTanh };
void grad_map(GradOp op, ScalarType dtype, const StridedLoop& loop, void* out, const void* grad, const void* x,
              double threshold, cudaStream_t stream);

// out (bool) = a == b, compared in the accumulation type (a, b of dtype).
void eq(ScalarType dtype, const StridedLoop& loop, bool* out, const void* a, const void* b, cudaStream_t stream);
// out = cond ? a : b (cond bool; out, a, b of dtype).
void where(ScalarType dtype, const StridedLoop& loop, void* out, const bool* cond, const void* a, const void* b,
           cudaStream_t stream);
// out = mask ? value : self (mask bool).
void masked_fill(ScalarType dtype, const StridedLoop& loop, void* out, const void* self, const bool* mask,
                 double value, cudaStream_t stream);
// out = mask ? grad * scale : 0 (dropout's backward; mask bool; floating types).
void mask_scale(ScalarType dtype, const StridedLoop& loop, void* out, const void* grad, const bool* mask,
                double scale, cudaStream_t stream);

}  // namespace remat::kernels::cuda
