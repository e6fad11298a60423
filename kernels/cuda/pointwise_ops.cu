// Mirrors ATen/native/cuda/PointwiseOpsKernel.cu, Lerp.cu and MaxMinElementwiseKernel.cu.
#include <type_traits>

#include "kernels/cuda/loops.cuh"
#include "kernels/cuda/pointwise_ops.h"

namespace remat::kernels::cuda {

namespace {

// static_cast<A>(static_cast<T>(value)) on the host, as kernels/cpu does with the scalar.
template <class T>
acc_t<T> scalar_as(double value) {
  if constexpr (std::is_same_v<T, bf16>) {
    return __bfloat162float(__float2bfloat16_rn(static_cast<float>(value)));
  } else if constexpr (std::is_same_v<T, f16>) {
    return __half2float(__float2half_rn(static_cast<float>(value)));
  } else {
    return static_cast<acc_t<T>>(static_cast<T>(value));
  }
}

template <class T, AddcOp OP>
struct AddcFunctor {
  acc_t<T> v;
  __device__ __forceinline__ T operator()(T x, T a, T b) const {
    if constexpr (OP == AddcOp::Mul) {
      return convert<T>(to_acc(x) + v * to_acc(a) * to_acc(b));
    } else {
      return convert<T>(to_acc(x) + v * (to_acc(a) / to_acc(b)));
    }
  }
};

template <class T>
struct LerpFunctor {
  acc_t<T> w;
  __device__ __forceinline__ T operator()(T x, T e) const {
    using A = acc_t<T>;
    const A a = to_acc(x), b = to_acc(e);
    return convert<T>(m_abs(w) < A(0.5) ? a + w * (b - a) : b - (b - a) * (A(1) - w));
  }
};

template <class T, bool kMax>
struct ExtremumFunctor {
  __device__ __forceinline__ T operator()(T x, T y) const {
    const auto p = to_acc(x), q = to_acc(y);
    if (p != p) return x;  // NaN (never true for integers and bool)
    if (q != q) return y;
    if constexpr (kMax) {
      return p >= q ? x : y;
    } else {
      return p <= q ? x : y;
    }
  }
};

}  // namespace

void addc(AddcOp op, ScalarType dtype, const StridedLoop& loop, void* out, const void* self, const void* t1,
          const void* t2, double value, cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_FLOATING(dtype, op == AddcOp::Mul ? "aten::addcmul_" : "aten::addcdiv_", [&] {
    const acc_t<scalar_t> v = scalar_as<scalar_t>(value);
    if (op == AddcOp::Mul) {
      launch_elementwise<scalar_t, scalar_t, scalar_t, scalar_t>(loop, out, {self, t1, t2},
                                                                 AddcFunctor<scalar_t, AddcOp::Mul>{v}, stream);
    } else {
      launch_elementwise<scalar_t, scalar_t, scalar_t, scalar_t>(loop, out, {self, t1, t2},
                                                                 AddcFunctor<scalar_t, AddcOp::Div>{v}, stream);
    }
  });
}

void lerp(ScalarType dtype, const StridedLoop& loop, void* out, const void* self, const void* end, double weight,
          cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_FLOATING(dtype, "aten::lerp_", [&] {
    LerpFunctor<scalar_t> f{static_cast<acc_t<scalar_t>>(weight)};
    launch_elementwise<scalar_t, scalar_t, scalar_t>(loop, out, {self, end}, f, stream);
  });
}

void extremum(bool is_max, ScalarType dtype, const StridedLoop& loop, void* out, const void* a, const void* b,
              cudaStream_t stream) {
  REMAT_CUDA_DISPATCH_ALL(dtype, is_max ? "aten::maximum" : "aten::minimum", [&] {
    if (is_max) {
      launch_elementwise<scalar_t, scalar_t, scalar_t>(loop, out, {a, b}, ExtremumFunctor<scalar_t, true>{}, stream);
    } else {
      launch_elementwise<scalar_t, scalar_t, scalar_t>(loop, out, {a, b}, ExtremumFunctor<scalar_t, false>{}, stream);
    }
  });
}

}  // namespace remat::kernels::cuda
