// No PyTorch counterpart (ATen's CPU loops always store through the caches; glibc's memcpy streams
// past its non-temporal threshold): large contiguous outputs written around the caches.
//
// An ordinary store first reads the 64-byte line it writes (the read-for-ownership), so c = a + b
// moves four tensors' bytes, not three. A non-temporal store writes whole lines straight to
// memory. That pays only when the output would have left the cache before anyone reads it, so
// only for ops whose bytes (read and written) pass what the cache keeps:
//
//   if (stream_output(3 * n * sizeof(float))) { ...stream stores...; stream_fence(); }
//
// Measured on the Xeon with AMX (2 cores, L2 2 MiB a core; out = a + b or a copy, float, ordinary
// / streamed stores, then the same followed by a sum over out as the next op would read it; ms,
// medians of 9, one run):
//   out = a + b, 2 threads   16 MiB out: 0.87 / 0.88, with the sum 1.23 / 1.45
//                            32 MiB out: 1.88 / 1.78, with the sum 2.90 / 2.90
//                            64 MiB out: 6.77 / 4.77, with the sum 8.38 / 6.88
//   out = a + b, 1 thread    16 MiB out: 1.79 / 1.79, with the sum 2.62 / 2.87
//                            32 MiB out: 3.95 / 3.56, with the sum 6.37 / 5.78
//   copy, 2 threads          32 MiB out: 1.19 / 1.20, with the sum 2.33 / 2.36
//                            48 MiB out: 2.22 / 1.85, with the sum 3.89 / 3.61
// so ops that move kStreamStoreBytes and more stream their output: from 96 MiB read and written
// (a copy of 48 MiB, a binary op with a 32 MiB output). At 48 MiB moved (the 16 MiB add) the output
// was still in cache for the sum, and streaming it cost 10-20%; at 64 MiB (the 32 MiB copy) even.
// The crossover is this machine's (its effective last-level cache); not measured on the AMD EPYC.
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/cpu/x86_intrinsics.h"

namespace remat::kernels::cpu {

constexpr int64_t kStreamStoreBytes = int64_t{96} << 20;

// Whether an op that reads and writes `bytes_moved` bytes in all writes its contiguous output with
// non-temporal stores.
inline bool stream_output(int64_t bytes_moved) {
#if defined(__AVX512F__)
  return bytes_moved >= kStreamStoreBytes;
#else
  return false;
#endif
}

// The number of T elements before p reaches a multiple of `alignment` bytes (at most n).
template <class T>
int64_t elements_to_alignment(const T* p, int64_t alignment, int64_t n) {
  const uintptr_t mis = reinterpret_cast<uintptr_t>(p) & static_cast<uintptr_t>(alignment - 1);
  if (mis == 0) return 0;
  const uintptr_t gap = static_cast<uintptr_t>(alignment) - mis;
  if (gap % sizeof(T) != 0) return n;  // never aligns (a misaligned element): all ordinary stores
  const int64_t k = static_cast<int64_t>(gap / sizeof(T));
  return k < n ? k : n;
}

// n bytes from src to dst (not overlapping), the whole 64-byte lines of dst around the caches; the
// caller fences (_mm_sfence) before another thread may read dst.
inline void copy_bytes_streaming(void* dst, const void* src, size_t n) {
#if defined(__AVX512F__)
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  size_t head = static_cast<size_t>(elements_to_alignment(d, 64, static_cast<int64_t>(n)));
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 256 <= n; i += 256) {  // four lines per trip: four loads in flight
    const __m512i v0 = _mm512_loadu_si512(s + i), v1 = _mm512_loadu_si512(s + i + 64);
    const __m512i v2 = _mm512_loadu_si512(s + i + 128), v3 = _mm512_loadu_si512(s + i + 192);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), v0);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + 64), v1);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + 128), v2);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i + 192), v3);
  }
  for (; i + 64 <= n; i += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), _mm512_loadu_si512(s + i));
  std::memcpy(d + i, s + i, n - i);
#else
  std::memcpy(dst, src, n);
#endif
}

// Orders this thread's non-temporal stores before its later stores (and so before the end of a
// parallel region that another thread then reads after).
inline void stream_fence() {
#if defined(__AVX512F__)
  _mm_sfence();
#endif
}

}  // namespace remat::kernels::cpu
