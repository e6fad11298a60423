// The online softmax statistics (Milakov & Gimelshein, "Online normalizer calculation for
// softmax", 2018): one pass keeps the running max and the sum of exp(x - max), rescaling the
// sum when the max grows. Shared by softmax.cu and loss.cu.
#pragma once

#include "kernels/cuda/common.cuh"

namespace remat::kernels::cuda {

// Running (max, sum of exp(x - max)) of a stream of values.
template <class A>
struct MaxSum {
  A m, s;
};

template <class A>
__device__ __forceinline__ MaxSum<A> add_value(MaxSum<A> a, A v) {
  if (v == neg_infinity<A>()) return a;  // exp(-inf) adds nothing
  if (v > a.m) {
    a.s = a.s * m_exp(a.m - v) + A(1);  // a.m == -inf: a.s is 0
    a.m = v;
  } else {
    a.s += m_exp(v - a.m);  // NaN v makes the sum NaN
  }
  return a;
}

template <class A>
__device__ __forceinline__ MaxSum<A> combine(MaxSum<A> a, MaxSum<A> b) {
  if (b.m == neg_infinity<A>()) return a;
  if (a.m == neg_infinity<A>()) return b;
  A m = a.m > b.m ? a.m : b.m;
  return {m, a.s * m_exp(a.m - m) + b.s * m_exp(b.m - m)};
}

template <int TPR, class A>
__device__ __forceinline__ MaxSum<A> group_combine(MaxSum<A> v, A* smem_m, A* smem_s) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    MaxSum<A> other{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
    v = combine(v, other);
  }
  if constexpr (TPR > 32) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) {
      smem_m[warp] = v.m;
      smem_s[warp] = v.s;
    }
    __syncthreads();
    v = lane < nwarps ? MaxSum<A>{smem_m[lane], smem_s[lane]} : MaxSum<A>{neg_infinity<A>(), A(0)};
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      MaxSum<A> other{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
      v = combine(v, other);
    }
  }
  return v;
}

}  // namespace remat::kernels::cuda
