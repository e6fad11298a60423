// Mirrors ATen/native/TensorIterator.h and ATen/native/cpu/Loops.h, reduced to what remat needs:
// an N-d iteration space with one element-stride per operand and dim (0 = broadcast), coalesced
// so that contiguous tensors become one flat loop.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "kernels/cpu/parallel.h"

namespace remat::kernels::cpu {

constexpr int kMaxDims = 16;
constexpr int kMaxOperands = 4;  // output first, then inputs

struct LoopShape {
  int ndim = 0;
  int noperands = 0;
  std::array<int64_t, kMaxDims> sizes{};
  std::array<std::array<int64_t, kMaxDims>, kMaxOperands> strides{};  // in elements

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
  // Every operand walks memory with stride 1 in one flat dim (after coalescing).
  bool is_contiguous() const {
    if (ndim == 0) return true;
    if (ndim != 1) return false;
    for (int i = 0; i < noperands; ++i)
      if (strides[i][0] != 1) return false;
    return true;
  }
  // Drops size-1 dims and merges dims where every operand's strides line up (row-major order:
  // dim d-1 is outer to dim d).
  void coalesce() {
    int out = 0;
    for (int d = 0; d < ndim; ++d) {
      if (sizes[d] == 1) continue;
      if (out > 0) {
        bool mergeable = true;
        for (int i = 0; i < noperands; ++i)
          mergeable = mergeable && strides[i][out - 1] == strides[i][d] * sizes[d];
        if (mergeable) {
          sizes[out - 1] *= sizes[d];
          for (int i = 0; i < noperands; ++i) strides[i][out - 1] = strides[i][d];
          continue;
        }
      }
      sizes[out] = sizes[d];
      for (int i = 0; i < noperands; ++i) strides[i][out] = strides[i][d];
      ++out;
    }
    ndim = out;
  }
};

// The index of linear position pos over dims [0, nd) of s (row-major), and each operand's element
// offset there.
inline void start_at(const LoopShape& s, int nd, int64_t pos, std::array<int64_t, kMaxDims>& idx,
                     std::array<int64_t, kMaxOperands>& off) {
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = pos % s.sizes[d];
    pos /= s.sizes[d];
  }
  off = {};
  for (int i = 0; i < s.noperands; ++i)
    for (int d = 0; d < nd; ++d) off[i] += idx[d] * s.strides[i][d];
}

// After idx[d] has advanced: carries into the dims outside it while an index reaches its size, each
// operand's offset kept up to date (a carry into dim d-1 rewinds dim d).
inline void carry_from(const LoopShape& s, int d, std::array<int64_t, kMaxDims>& idx,
                       std::array<int64_t, kMaxOperands>& off) {
  for (; d > 0 && idx[d] >= s.sizes[d]; --d) {
    for (int i = 0; i < s.noperands; ++i) off[i] += s.strides[i][d - 1] - idx[d] * s.strides[i][d];
    idx[d] = 0;
    ++idx[d - 1];
  }
}

// Calls f(offsets, n, inner_strides) for runs of the innermost dim over the linear element range
// [begin, end) of the iteration space; offsets are element offsets per operand.
template <class F>
void for_each_run(const LoopShape& s, int64_t begin, int64_t end, const F& f) {
  const int nd = s.ndim, no = s.noperands;
  if (nd == 0) {
    std::array<int64_t, kMaxOperands> off{};
    if (begin < end) f(off, int64_t{1}, off);
    return;
  }
  std::array<int64_t, kMaxOperands> inner{};
  for (int i = 0; i < no; ++i) inner[i] = s.strides[i][nd - 1];
  const int64_t inner_size = s.sizes[nd - 1];
  // Each operand's offset is kept up to date as the index advances: recomputing it from the index for
  // every run cost more than a short run's work (runs of 8 or 64 elements).
  std::array<int64_t, kMaxDims> idx{};
  std::array<int64_t, kMaxOperands> off{};
  start_at(s, nd, begin, idx, off);
  int64_t pos = begin;
  while (pos < end) {
    int64_t n = inner_size - idx[nd - 1];
    if (n > end - pos) n = end - pos;
    f(off, n, inner);
    pos += n;
    idx[nd - 1] += n;
    for (int i = 0; i < no; ++i) off[i] += n * inner[i];
    carry_from(s, nd - 1, idx, off);
  }
}

// Calls f(offsets, n, inner_strides, rows, row_strides) for blocks of whole rows of the innermost
// dim: `rows` consecutive indices of the dim outside it (row_strides: that dim's strides), each a
// run of n elements; element (r, i) of a block is at offsets[k] + r row_strides[k] + i
// inner_strides[k]. Over the threads in whole rows. As PyTorch's 2-d loops (Loops.h's
// VectorizedLoop2d): a kernel whose runs are short (the rotary's 8 complex numbers) pays the
// iteration's bookkeeping once a block, not once a run.
template <class F>
void parallel_for_each_row_block(const LoopShape& s, const F& f) {
  const int nd = s.ndim, no = s.noperands;
  if (nd < 2) {
    parallel_for(0, s.numel(), kGrainSize, [&](int64_t b, int64_t e) {
      for_each_run(s, b, e, [&](const auto& off, int64_t n, const auto& inner) {
        std::array<int64_t, kMaxOperands> none{};
        f(off, n, inner, int64_t{1}, none);
      });
    });
    return;
  }
  const int64_t n = s.sizes[nd - 1];
  if (n == 0) return;
  std::array<int64_t, kMaxOperands> inner{}, row{};
  for (int i = 0; i < no; ++i) inner[i] = s.strides[i][nd - 1], row[i] = s.strides[i][nd - 2];
  const int64_t total_rows = s.numel() / n;
  parallel_for(0, total_rows, rows_grain(n), [&](int64_t rb, int64_t re) {
    std::array<int64_t, kMaxDims> idx{};  // row rb's index over dims 0 .. nd-2
    std::array<int64_t, kMaxOperands> off{};
    start_at(s, nd - 1, rb, idx, off);
    for (int64_t pos = rb; pos < re;) {
      const int64_t m = std::min(s.sizes[nd - 2] - idx[nd - 2], re - pos);
      f(off, n, inner, m, row);
      pos += m;
      idx[nd - 2] += m;
      for (int i = 0; i < no; ++i) off[i] += m * row[i];
      carry_from(s, nd - 2, idx, off);
    }
  });
}

// Parallel version over the whole space.
template <class F>
void parallel_for_each_run(const LoopShape& s, const F& f) {
  parallel_for(0, s.numel(), kGrainSize, [&](int64_t b, int64_t e) { for_each_run(s, b, e, f); });
}

}  // namespace remat::kernels::cpu
