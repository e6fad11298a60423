// No PyTorch counterpart (ATen's CPU loops leave prefetching to the hardware): a software prefetch
// for loops that spend long on each element's arithmetic.
//
// The hardware prefetcher follows a stream, but only so far ahead of the loads. A loop whose
// arithmetic outlasts its memory traffic (gelu's backward: an exp and a division an element) still
// waits on each line of an input that comes from memory, as a saved activation does in a training
// step; asking for the line kPrefetchBytes ahead of each load hides that wait:
//
//   for (i = 0; i + 16 <= n; i += 16) { prefetch_ahead(x + i); ...load16(x + i)... }
//
// Measured on the Xeon with AMX (1 thread, 2^20 floats, inputs and output out of cache, 3 rounds):
// gelu_backward f32 0.99-1.03 -> 0.87-0.89 ms with 1-2 KiB ahead (4 KiB: 0.89, 16 KiB: 0.88-0.91);
// the prefetch of the output for writing (prefetchw) gained nothing, nor did a prefetch in float's
// memory-bound loops (out = a + b: 0.82 / 0.81-0.85 ms, a copy: 0.61 / 0.61), which the hardware
// prefetcher keeps fed. With the data in cache it costs nothing measurable (0.57 / 0.54 ms).
// Where it is used, and what it gained in the GPT step, is said at each use; where it was tried
// without a gain (softmax's backward rows, column sums, strided copies, bfloat16 times a number),
// it is not used.
#pragma once

#include <cstdint>

#include "kernels/cpu/x86_intrinsics.h"

namespace remat::kernels::cpu {

constexpr uintptr_t kPrefetchBytes = 2048;

// Asks for the cache line kPrefetchBytes past p. A prefetch never faults, so past the end of p's
// buffer is harmless; the address is formed as an integer (no pointer arithmetic past the end).
inline void prefetch_ahead(const void* p) {
#if defined(__SSE__)
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + kPrefetchBytes), _MM_HINT_T0);
#else
  (void)p;
#endif
}

// prefetch_ahead for each 64-byte line of the n elements at row: for a loop over rows that makes
// more than one pass over each row (a norm's statistics, then its output), once at a row's start.
template <class T>
void prefetch_row_ahead(const T* row, int64_t n) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(row);
  const uintptr_t end = begin + static_cast<uintptr_t>(n) * sizeof(T);
  for (uintptr_t line = begin; line < end; line += 64) prefetch_ahead(reinterpret_cast<const void*>(line));
}

}  // namespace remat::kernels::cpu
