// The device side of CUDA C++ on the emulated device: the qualifiers, threadIdx and friends,
// barriers, warp shuffles and votes, atomics and the intrinsics remat's kernels use (mirrors
// the CUDA C++ Programming Guide's built-in variables and functions). Included by this folder's
// cuda_runtime.h, so a .cu file compiled by the host compiler sees what nvcc would give it.
//
// __shared__ variables are thread_local: a block's threads are fibers on one worker thread, so
// they share one copy, and blocks on other workers have theirs (contents left from an earlier
// block, as on a GPU). Dynamic shared memory: REMAT_CUDA_DYNAMIC_SHARED(T, name).
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/emu/block.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __shared__ thread_local
#define __constant__
#define __launch_bounds__(...)
#define __CUDACC_EMU__ 1

namespace remat::cuda_emu {

inline uint3 thread_index() { return current_thread().index; }
inline uint3 block_index() { return current_block().index; }
inline dim3 block_dim() { return current_block().call->block; }
inline dim3 grid_dim() { return current_block().call->grid; }

inline unsigned lane_id() { return static_cast<unsigned>(current_thread().linear) & 31u; }

// A warp collective: every lane of `mask` puts in its value, then each reads lane src's.
template <class T>
T warp_exchange(unsigned mask, T value, int src_lane) {
  static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable_v<T>, "warp shuffles move up to 8 bytes");
  std::memcpy(warp_slot(static_cast<int>(lane_id())), &value, sizeof(T));
  uint64_t* const base = warp_slot(0);
  ThreadState& t = current_thread();
  warp_barrier(mask);
  t.parity ^= 1u;
  T out;
  std::memcpy(&out, base + src_lane, sizeof(T));
  return out;
}

}  // namespace remat::cuda_emu

#define threadIdx (::remat::cuda_emu::thread_index())
#define blockIdx (::remat::cuda_emu::block_index())
#define blockDim (::remat::cuda_emu::block_dim())
#define gridDim (::remat::cuda_emu::grid_dim())
constexpr int warpSize = 32;

// Dynamic shared memory: `extern __shared__ T name[]` under nvcc.
#define REMAT_CUDA_DYNAMIC_SHARED(T, NAME) \
  T* NAME = reinterpret_cast<T*>(::remat::cuda_emu::current_block().dynamic_shared)

// ---- barriers -----------------------------------------------------------------------------------
inline void __syncthreads() { ::remat::cuda_emu::block_barrier(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) { ::remat::cuda_emu::warp_barrier(mask); }

// ---- warp shuffles and votes (width 32 only: remat uses no narrower segments) -----------------
template <class T>
T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
  const int lane = static_cast<int>(::remat::cuda_emu::lane_id());
  const int base = lane & ~(width - 1);
  return ::remat::cuda_emu::warp_exchange(mask, v, base + (src_lane & (width - 1)));
}
template <class T>
T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
  const int lane = static_cast<int>(::remat::cuda_emu::lane_id());
  int src = lane ^ lane_mask;
  if (src / width != lane / width) src = lane;  // outside the segment: own value, as CUDA
  return ::remat::cuda_emu::warp_exchange(mask, v, src);
}
template <class T>
T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int lane = static_cast<int>(::remat::cuda_emu::lane_id());
  int src = lane + static_cast<int>(delta);
  if (src / width != lane / width) src = lane;
  return ::remat::cuda_emu::warp_exchange(mask, v, src);
}
template <class T>
T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
  const int lane = static_cast<int>(::remat::cuda_emu::lane_id());
  int src = lane - static_cast<int>(delta);
  if (src < 0 || src / width != lane / width) src = lane;
  return ::remat::cuda_emu::warp_exchange(mask, v, src);
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
  unsigned bits = 0;
  for (int src = 0; src < 32; ++src) {
    // One exchange per lane keeps the code short; votes are rare in remat's kernels.
    const int p = ::remat::cuda_emu::warp_exchange(mask, predicate != 0 ? 1 : 0, src);
    if ((mask >> src & 1u) != 0 && p != 0) bits |= 1u << src;
  }
  return bits;
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) { return !__any_sync(mask, !predicate); }
inline unsigned __activemask() { return 0xffffffffu; }

// ---- atomics (blocks run on several host threads: real atomics) ---------------------------------
namespace remat::cuda_emu {
template <class T, class F>
T atomic_update(T* address, F f) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "atomics on 4- and 8-byte values");
  using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  auto* p = reinterpret_cast<Bits*>(address);
  Bits old_bits = __atomic_load_n(p, __ATOMIC_RELAXED);
  for (;;) {
    T old;
    std::memcpy(&old, &old_bits, sizeof(T));
    const T desired = f(old);
    Bits desired_bits;
    std::memcpy(&desired_bits, &desired, sizeof(T));
    if (__atomic_compare_exchange_n(p, &old_bits, desired_bits, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) return old;
  }
}
}  // namespace remat::cuda_emu

template <class T>
inline T atomicAdd(T* address, T value) {
  return ::remat::cuda_emu::atomic_update(address, [value](T old) { return static_cast<T>(old + value); });
}
template <class T>
inline T atomicSub(T* address, T value) {
  return ::remat::cuda_emu::atomic_update(address, [value](T old) { return static_cast<T>(old - value); });
}
template <class T>
inline T atomicMin(T* address, T value) {
  return ::remat::cuda_emu::atomic_update(address, [value](T old) { return value < old ? value : old; });
}
template <class T>
inline T atomicMax(T* address, T value) {
  return ::remat::cuda_emu::atomic_update(address, [value](T old) { return value > old ? value : old; });
}
template <class T>
inline T atomicExch(T* address, T value) {
  return ::remat::cuda_emu::atomic_update(address, [value](T) { return value; });
}
template <class T>
inline T atomicCAS(T* address, T compare, T value) {
  return ::remat::cuda_emu::atomic_update(address, [compare, value](T old) { return old == compare ? value : old; });
}

// ---- arithmetic intrinsics ----------------------------------------------------------------------
// Rounded as written, never fused into an FMA (what the _rn forms promise under nvcc).
inline float __fmul_rn(float a, float b) {
  volatile float r = a * b;
  return r;
}
inline float __fadd_rn(float a, float b) {
  volatile float r = a + b;
  return r;
}
inline double __dmul_rn(double a, double b) {
  volatile double r = a * b;
  return r;
}
inline double __dadd_rn(double a, double b) {
  volatile double r = a + b;
  return r;
}
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
template <class T>
inline T __ldg(const T* p) {
  return *p;
}

// CUDA's min/max for integers and floats (unqualified in device code).
template <class A, class B>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
}
template <class A, class B>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}
