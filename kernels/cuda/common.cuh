// Device-side helpers shared by the .cu files (mirrors ATen/native/cuda/{Loops,
// MemoryAccess,block_reduce}.cuh and ATen/OpMathType.h): element types per ScalarType, the
// float accumulation of 16-bit types, conversions that round like the CPU kernels, 16-byte
// vector access, warp/block reductions, and launch sizing.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <limits>
#include <utility>

#include "engine/core/error.h"
#include "engine/core/scalar_type.h"
#include "engine/cuda/cuda_exception.h"
#include "kernels/cuda/loop.h"

namespace remat::kernels::cuda {

// ---------------------------------------------------------------------------------------------
// element types
// ---------------------------------------------------------------------------------------------

using bf16 = __nv_bfloat16;
using f16 = __half;

// Arithmetic type of an element type: 16-bit floats compute in float (as kernels/cpu's acc_t).
template <class T> struct AccType { using type = T; };
template <> struct AccType<bf16> { using type = float; };
template <> struct AccType<f16> { using type = float; };
template <class T> using acc_t = typename AccType<T>::type;

__device__ __forceinline__ float to_acc(bf16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_acc(f16 x) { return __half2float(x); }
template <class T>
__device__ __forceinline__ T to_acc(T x) { return x; }

// static_cast<T>(value) as the CPU kernels do it: 16-bit floats round to nearest even from
// float (a double goes through float first, as remat::BFloat16(float) does).
template <class T> struct Convert {
  template <class A> __device__ __forceinline__ static T from(A a) { return static_cast<T>(a); }
};
template <> struct Convert<bf16> {
  template <class A> __device__ __forceinline__ static bf16 from(A a) { return __float2bfloat16_rn(static_cast<float>(a)); }
};
template <> struct Convert<f16> {
  template <class A> __device__ __forceinline__ static f16 from(A a) { return __float2half_rn(static_cast<float>(a)); }
};
template <> struct Convert<bool> {
  template <class A> __device__ __forceinline__ static bool from(A a) { return a != A(0); }
};
template <class T, class A>
__device__ __forceinline__ T convert(A a) {
  return Convert<T>::from(a);
}

// Runs f with `scalar_t` bound to the device element type of dtype.
#define REMAT_CUDA_TYPE_CASE(ENUM, CTYPE, ...) \
  case ::remat::ScalarType::ENUM: {            \
    using scalar_t = CTYPE;                    \
    return __VA_ARGS__();                      \
  }
#define REMAT_CUDA_DTYPE_ERROR(TYPE, NAME)                                                              \
  throw ::remat::Error(::remat::detail::str("\"", NAME, "\" not implemented for '", ::remat::toString(TYPE), \
                                            "' on CUDA"))

#define REMAT_CUDA_DISPATCH_FLOATING(TYPE, NAME, ...)                              \
  [&] {                                                                            \
    switch (TYPE) {                                                                \
      REMAT_CUDA_TYPE_CASE(Float, float, __VA_ARGS__)                              \
      REMAT_CUDA_TYPE_CASE(Double, double, __VA_ARGS__)                            \
      REMAT_CUDA_TYPE_CASE(BFloat16, ::remat::kernels::cuda::bf16, __VA_ARGS__)    \
      REMAT_CUDA_TYPE_CASE(Half, ::remat::kernels::cuda::f16, __VA_ARGS__)         \
      default: REMAT_CUDA_DTYPE_ERROR(TYPE, NAME);                                 \
    }                                                                              \
  }()
#define REMAT_CUDA_DISPATCH_NUMERIC(TYPE, NAME, ...)                               \
  [&] {                                                                            \
    switch (TYPE) {                                                                \
      REMAT_CUDA_TYPE_CASE(Float, float, __VA_ARGS__)                              \
      REMAT_CUDA_TYPE_CASE(Double, double, __VA_ARGS__)                            \
      REMAT_CUDA_TYPE_CASE(BFloat16, ::remat::kernels::cuda::bf16, __VA_ARGS__)    \
      REMAT_CUDA_TYPE_CASE(Half, ::remat::kernels::cuda::f16, __VA_ARGS__)         \
      REMAT_CUDA_TYPE_CASE(Long, int64_t, __VA_ARGS__)                             \
      default: REMAT_CUDA_DTYPE_ERROR(TYPE, NAME);                                 \
    }                                                                              \
  }()
#define REMAT_CUDA_DISPATCH_ALL(TYPE, NAME, ...)                                   \
  [&] {                                                                            \
    switch (TYPE) {                                                                \
      REMAT_CUDA_TYPE_CASE(Float, float, __VA_ARGS__)                              \
      REMAT_CUDA_TYPE_CASE(Double, double, __VA_ARGS__)                            \
      REMAT_CUDA_TYPE_CASE(BFloat16, ::remat::kernels::cuda::bf16, __VA_ARGS__)    \
      REMAT_CUDA_TYPE_CASE(Half, ::remat::kernels::cuda::f16, __VA_ARGS__)         \
      REMAT_CUDA_TYPE_CASE(Long, int64_t, __VA_ARGS__)                             \
      REMAT_CUDA_TYPE_CASE(Bool, bool, __VA_ARGS__)                                \
      default: REMAT_CUDA_DTYPE_ERROR(TYPE, NAME);                                 \
    }                                                                              \
  }()

// ---------------------------------------------------------------------------------------------
// math in the accumulation type (float or double; the CPU kernels' std:: functions)
// ---------------------------------------------------------------------------------------------

__device__ __forceinline__ float m_exp(float x) { return expf(x); }
__device__ __forceinline__ double m_exp(double x) { return exp(x); }
__device__ __forceinline__ float m_log(float x) { return logf(x); }
__device__ __forceinline__ double m_log(double x) { return log(x); }
__device__ __forceinline__ float m_sin(float x) { return sinf(x); }
__device__ __forceinline__ double m_sin(double x) { return sin(x); }
__device__ __forceinline__ float m_cos(float x) { return cosf(x); }
__device__ __forceinline__ double m_cos(double x) { return cos(x); }
__device__ __forceinline__ float m_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double m_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float m_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double m_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float m_erf(float x) { return erff(x); }
__device__ __forceinline__ double m_erf(double x) { return erf(x); }
__device__ __forceinline__ float m_pow(float x, float e) { return powf(x, e); }
__device__ __forceinline__ double m_pow(double x, double e) { return pow(x, e); }
__device__ __forceinline__ float m_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double m_abs(double x) { return fabs(x); }
__device__ __forceinline__ int64_t m_abs(int64_t x) { return x < 0 ? -x : x; }

template <class A>
__device__ __forceinline__ A neg_infinity() {
  return -std::numeric_limits<A>::infinity();
}
template <>
__device__ __forceinline__ int64_t neg_infinity<int64_t>() {
  return std::numeric_limits<int64_t>::lowest();
}

// ---------------------------------------------------------------------------------------------
// 16-byte vector access
// ---------------------------------------------------------------------------------------------

template <class T, int N>
struct alignas(sizeof(T) * N) AlignedVector {
  T val[N];
};

inline bool is_aligned(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// ---------------------------------------------------------------------------------------------
// reductions
// ---------------------------------------------------------------------------------------------

struct SumOp {
  template <class A> __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
};
// NaN wins, as kernels/cpu's MaxReducer.
struct MaxOp {
  template <class A> __device__ __forceinline__ A operator()(A a, A b) const { return (a > b || a != a) ? a : b; }
};

template <class A, class Op>
__device__ __forceinline__ A warp_allreduce(A v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// All threads of the block get op over every thread's v (a fixed tree: deterministic). smem must
// hold 32 values; the block size is a multiple of 32.
template <class A, class Op>
__device__ __forceinline__ A block_allreduce(A v, Op op, A identity, A* smem) {
  v = warp_allreduce(v, op);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  __syncthreads();  // smem may still be read by a previous call
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = lane < nwarps ? smem[lane] : identity;
  return warp_allreduce(v, op);
}

// Reduction over a group of TPR threads working on one row: a warp (TPR = 32) or the whole
// block (TPR = blockDim.x).
template <int TPR, class A, class Op>
__device__ __forceinline__ A group_allreduce(A v, Op op, A identity, A* smem) {
  if constexpr (TPR == 32) {
    return warp_allreduce(v, op);
  } else {
    return block_allreduce(v, op, identity, smem);
  }
}

// ---------------------------------------------------------------------------------------------
// launch sizing (host)
// ---------------------------------------------------------------------------------------------

constexpr int kBlockSize = 256;

// Multiprocessors of the current device (cached per device).
int current_sm_count();

// Blocks for a grid-stride loop over n work items of block_size threads: enough to fill every
// multiprocessor several times over, never more than the work needs.
inline int64_t grid_size(int64_t n, int block_size = kBlockSize, int blocks_per_sm = 8) {
  int64_t needed = (n + block_size - 1) / block_size;
  int64_t cap = static_cast<int64_t>(current_sm_count()) * blocks_per_sm;
  int64_t g = needed < cap ? needed : cap;
  return g < 1 ? 1 : g;
}

}  // namespace remat::kernels::cuda
