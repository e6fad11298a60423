// Mirrors ATen/native/cuda/BinaryArithmeticKernel.cu, CompareEQKernel.cu, TensorCompare.cu
// (where, masked_fill) and Dropout.cu's masked scale: two- and three-operand elementwise ops.
#include <type_traits>

#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/pointwise.h"

namespace remat::kernels::cuda {

namespace {

template <class T, BinaryOp OP>
struct BinaryFunctor {
  __device__ __forceinline__ T operator()(T a, T b) const {
    auto x = to_acc(a);
    auto y = to_acc(b);
    if constexpr (OP == BinaryOp::Add) return convert<T>(x + y);
    else if constexpr (OP == BinaryOp::Sub) return convert<T>(x - y);
    else if constexpr (OP == BinaryOp::Mul) return convert<T>(x * y);
    else return convert<T>(x / y);
  }
};

template <BinaryOp OP>
void binary_typed(ScalarType dtype, const StridedLoop& loop, void* out, const void* a, const void* b,
                  cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_NUMERIC(dtype, "binary op", [&] {
    launch_elementwise<scalar_t, scalar_t, scalar_t>(loop, out, {a, b}, BinaryFunctor<scalar_t, OP>{}, stream);
  });
}

template <class T>
struct EqFunctor {
  __device__ __forceinline__ bool operator()(T a, T b) const { return to_acc(a) == to_acc(b); }
};

template <class T>
struct WhereFunctor {
  __device__ __forceinline__ T operator()(bool c, T a, T b) const { return c ? a : b; }
};

template <class T>
struct MaskedFillFunctor {
  T value;
  __device__ __forceinline__ T operator()(T x, bool m) const { return m ? value : x; }
};

template <class T>
struct MaskScaleFunctor {
  acc_t<T> scale;
  __device__ __forceinline__ T operator()(T g, bool m) const {
    // g * (m ? scale : 0), as the CPU's masked_scale: a dropped negative gradient is -0, not +0.
    return convert<T>(to_acc(g) * (m ? scale : acc_t<T>(0)));
  }
};

// masked_fill's value as static_cast<T>(double) on the host (bf16/f16 through float, RNE).
template <class T>
T host_convert(double v) {
  if constexpr (std::is_same_v<T, bf16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, f16>) {
    return __float2half_rn(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace

void binary(BinaryOp op, ScalarType dtype, const StridedLoop& loop, void* out, const void* a, const void* b,
            cudaStream_t stream) {
  switch (op) {
    case BinaryOp::Add: return binary_typed<BinaryOp::Add>(dtype, loop, out, a, b, stream);
    case BinaryOp::Sub: return binary_typed<BinaryOp::Sub>(dtype, loop, out, a, b, stream);
    case BinaryOp::Mul: return binary_typed<BinaryOp::Mul>(dtype, loop, out, a, b, stream);
    case BinaryOp::Div: return binary_typed<BinaryOp::Div>(dtype, loop, out, a, b, stream);
  }
}

void eq(ScalarType dtype, const StridedLoop& loop, bool* out, const void* a, const void* b, cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_ALL(dtype, "aten::eq", [&] {
    launch_elementwise<bool, scalar_t, scalar_t>(loop, out, {a, b}, EqFunctor<scalar_t>{}, stream);
  });
}

void where(ScalarType dtype, const StridedLoop& loop, void* out, const bool* cond, const void* a, const void* b,
           cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_ALL(dtype, "aten::where", [&] {
    launch_elementwise<scalar_t, bool, scalar_t, scalar_t>(loop, out, {cond, a, b}, WhereFunctor<scalar_t>{}, stream);
  });
}

void masked_fill(ScalarType dtype, const StridedLoop& loop, void* out, const void* self, const bool* mask,
                 double value, cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_ALL(dtype, "aten::masked_fill", [&] {
    MaskedFillFunctor<scalar_t> f{host_convert<scalar_t>(value)};
    launch_elementwise<scalar_t, scalar_t, bool>(loop, out, {self, mask}, f, stream);
  });
}

void mask_scale(ScalarType dtype, const StridedLoop& loop, void* out, const void* grad, const bool* mask,
                double scale, cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "aten::native_dropout_backward", [&] {
    MaskScaleFunctor<scalar_t> f{static_cast<acc_t<scalar_t>>(scale)};
    launch_elementwise<scalar_t, scalar_t, bool>(loop, out, {grad, mask}, f, stream);
  });
}

}  // namespace remat::kernels::cuda
