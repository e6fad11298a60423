// Mirrors ATen/native/cuda/Loops.cuh and CUDALoops.cuh: one elementwise kernel template for any
// arity. f receives the raw input elements and returns the output element.
//   * contiguous operands, 16-byte aligned: each thread moves 16 bytes of the widest operand
//     per step (float4, 8 x bf16, ...), grid-stride, the remainder element by element;
//   * otherwise: one element per step, offsets from the strides (32-bit index arithmetic when
//     the element count allows).
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/common.cuh"

namespace remat::kernels::cuda {

template <int N>
struct PtrArray {
  char* data[N];
};

// One aligned vector per input (a typed pack, since inputs may differ in type).
template <int VEC, class... Ts> struct VecPack {
  __device__ __forceinline__ void load(char* const*, int64_t) {}
};
template <int VEC, class T, class... Ts> struct VecPack<VEC, T, Ts...> {
  AlignedVector<T, VEC> head;
  VecPack<VEC, Ts...> tail;
  __device__ __forceinline__ void load(char* const* data, int64_t v) {
    head = reinterpret_cast<const AlignedVector<T, VEC>*>(data[0])[v];
    tail.load(data + 1, v);
  }
};
template <size_t I, int VEC, class T, class... Ts>
__device__ __forceinline__ const auto& vec_get(const VecPack<VEC, T, Ts...>& p) {
  if constexpr (I == 0) {
    return p.head;
  } else {
    return vec_get<I - 1>(p.tail);
  }
}

template <class F, class Out, class... In, size_t... I>
__device__ __forceinline__ void apply_at(const F& f, char* const* data, const int64_t* off, std::index_sequence<I...>) {
  reinterpret_cast<Out*>(data[0])[off[0]] = f(reinterpret_cast<const In*>(data[I + 1])[off[I + 1]]...);
}

// Two vectors per step, both loaded before either is stored: more bytes in flight per thread
// (the store of the first could alias the second's inputs, so the compiler would not reorder).
template <int VEC, class F, class Out, class... In, size_t... I>
__device__ __forceinline__ void apply_vec2(const F& f, char* const* data, int64_t v0, int64_t v1, bool second,
                                           std::index_sequence<I...>) {
  VecPack<VEC, In...> in0, in1{};  // in1 is read only when loaded (`second`)
  in0.load(data + 1, v0);
  if (second) in1.load(data + 1, v1);
  AlignedVector<Out, VEC> out0, out1;
#pragma unroll
  for (int j = 0; j < VEC; ++j) out0.val[j] = f(vec_get<I>(in0).val[j]...);
  reinterpret_cast<AlignedVector<Out, VEC>*>(data[0])[v0] = out0;
  if (second) {
#pragma unroll
    for (int j = 0; j < VEC; ++j) out1.val[j] = f(vec_get<I>(in1).val[j]...);
    reinterpret_cast<AlignedVector<Out, VEC>*>(data[0])[v1] = out1;
  }
}

template <int VEC, class F, class Out, class... In>
__global__ void elementwise_vec_kernel(int64_t n, PtrArray<sizeof...(In) + 1> ptrs, F f) {
  constexpr int N = sizeof...(In) + 1;
  const int64_t nvec = n / VEC;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t v = tid; v < nvec; v += 2 * stride)
    apply_vec2<VEC, F, Out, In...>(f, ptrs.data, v, v + stride, v + stride < nvec, std::index_sequence_for<In...>{});
  // the last n % VEC elements
  const int64_t i = nvec * VEC + tid;
  if (i < n) {
    int64_t off[N];
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = i;
    apply_at<F, Out, In...>(f, ptrs.data, off, std::index_sequence_for<In...>{});
  }
}

template <class index_t, class F, class Out, class... In>
__global__ void elementwise_strided_kernel(StridedLoop loop, index_t n, PtrArray<sizeof...(In) + 1> ptrs, F f) {
  constexpr int N = sizeof...(In) + 1;
  const index_t stride = static_cast<index_t>(gridDim.x) * blockDim.x;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    int64_t off[N];
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    index_t rem = i;
    for (int d = loop.ndim - 1; d >= 0; --d) {
      const index_t size = static_cast<index_t>(loop.sizes[d]);
      const index_t idx = rem % size;
      rem /= size;
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += static_cast<int64_t>(idx) * loop.strides[k][d];
    }
    apply_at<F, Out, In...>(f, ptrs.data, off, std::index_sequence_for<In...>{});
  }
}

template <class T, class... Ts>
constexpr int max_size() {
  if constexpr (sizeof...(Ts) == 0) {
    return static_cast<int>(sizeof(T));
  } else {
    return sizeof(T) > static_cast<size_t>(max_size<Ts...>()) ? static_cast<int>(sizeof(T)) : max_size<Ts...>();
  }
}

// out = f(in...) over loop (output operand 0, inputs 1..). Pointers are element 0 of each operand.
template <class Out, class... In, class F>
void launch_elementwise(const StridedLoop& loop, void* out, std::array<const void*, sizeof...(In)> in, const F& f,
                        cudaStream_t stream) {
  constexpr int N = sizeof...(In) + 1;
  const int64_t n = loop.numel();
  if (n == 0) return;
  PtrArray<N> ptrs;
  ptrs.data[0] = static_cast<char*>(out);
  for (int k = 1; k < N; ++k) ptrs.data[k] = const_cast<char*>(static_cast<const char*>(in[k - 1]));
  constexpr int kVec = 16 / max_size<Out, In...>() > 0 ? 16 / max_size<Out, In...>() : 1;
  bool vectorizable = loop.is_contiguous(N);
  if (vectorizable) {
    // every operand's pointer must be aligned to its vector width
    const size_t widths[N] = {sizeof(Out) * kVec, (sizeof(In) * kVec)...};
    for (int k = 0; k < N; ++k) vectorizable = vectorizable && is_aligned(ptrs.data[k], widths[k]);
  }
  if (vectorizable) {
    const int64_t grid = grid_size((n + 2 * kVec - 1) / (2 * kVec));
    REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid), kBlockSize, 0, stream, elementwise_vec_kernel<kVec, F, Out, In...>)(n, ptrs, f);
  } else if (n <= static_cast<int64_t>(INT32_MAX)) {
    REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid_size(n)), kBlockSize, 0, stream, elementwise_strided_kernel<uint32_t, F, Out, In...>)(loop, static_cast<uint32_t>(n), ptrs, f);
  } else {
    REMAT_CUDA_LAUNCH(static_cast<unsigned>(grid_size(n)), kBlockSize, 0, stream, elementwise_strided_kernel<int64_t, F, Out, In...>)(loop, n, ptrs, f);
  }
  REMAT_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace remat::kernels::cuda
