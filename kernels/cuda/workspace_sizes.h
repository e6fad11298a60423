// The device memory remat's CUDA kernels ask their callers for (no PyTorch counterpart: ATen's CUDA
// ops size their scratch inline). Plain C++, no CUDA header and no kernel, so that a Meta dry run
// that imitates CUDA allocates exactly what the CUDA ops allocate, in builds without CUDA too:
// the kernels plan their launches with these, the ops size their workspaces with them, and the
// Meta kernels (ops/cuda_temporaries.cpp) read the same.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/core/scalar_type.h"

namespace remat::kernels::cuda {

// ---- reductions (reduce.cu) ----
constexpr int64_t kRowChunkTarget = 16384;    // elements per chunk when rows are split
constexpr int64_t kRowParallelism = 2048;     // virtual rows wanted when rows are few
constexpr int64_t kColParallelism = 1 << 18;  // output-element threads wanted
constexpr int64_t kColMinChunk = 64;

struct ReduceChunks {
  int64_t chunk, nchunks;  // elements of the reduced dim per chunk; chunks per output element
};

// Few long rows are split into chunks (a second pass adds the partials up).
inline ReduceChunks reduce_row_chunks(int64_t rows, int64_t len) {
  ReduceChunks c{len, 1};
  if (rows < kRowParallelism && len > 2 * kRowChunkTarget) {
    const int64_t want = (kRowParallelism + rows - 1) / rows;
    const int64_t by_len = (len + kRowChunkTarget - 1) / kRowChunkTarget;
    const int64_t nchunks = want < by_len ? want : by_len;
    if (nchunks > 1) {
      int64_t chunk = (len + nchunks - 1) / nchunks;
      chunk = (chunk + 15) / 16 * 16;  // keeps every chunk start 16-element aligned
      c.chunk = chunk;
      c.nchunks = (len + chunk - 1) / chunk;
    }
  }
  return c;
}

// A column reduction with few outputs splits the reduced dim likewise.
inline ReduceChunks reduce_col_chunks(int64_t outer, int64_t red, int64_t inner) {
  const int64_t nout = outer * inner;
  ReduceChunks c{red, 1};
  if (nout < kColParallelism && red >= 2 * kColMinChunk) {
    const int64_t want = (kColParallelism + nout - 1) / nout;
    const int64_t by_len = red / kColMinChunk;
    int64_t nchunks = want < by_len ? want : by_len;
    if (nchunks > 65535) nchunks = 65535;
    if (nchunks > 1) {
      c.chunk = (red + nchunks - 1) / nchunks;
      c.nchunks = (red + c.chunk - 1) / c.chunk;
    }
  }
  return c;
}

// Bytes of a reduction's accumulator type.
inline size_t reduce_acc_bytes(ScalarType dtype) {
  return dtype == ScalarType::Double || dtype == ScalarType::Long ? 8 : 4;
}

// The partials of a chunked reduction of [outer, reduced, inner] (0: one pass, no workspace).
inline size_t reduce_workspace_bytes(ScalarType dtype, int64_t outer, int64_t reduced, int64_t inner) {
  if (inner == 1) {
    const ReduceChunks c = reduce_row_chunks(outer, reduced);
    return c.nchunks == 1 ? 0 : static_cast<size_t>(outer * c.nchunks) * reduce_acc_bytes(dtype);
  }
  const ReduceChunks c = reduce_col_chunks(outer, reduced, inner);
  return c.nchunks == 1 ? 0 : static_cast<size_t>(c.nchunks * outer * inner) * reduce_acc_bytes(dtype);
}

// ---- layer norm / RMS norm backward (normalization.cu) ----
constexpr int64_t kNormRowsPerChunk = 32;
constexpr int64_t kNormMaxChunks = 1024;

// Rows per chunk of the parameter-gradient pass.
inline int64_t norm_rows_per_chunk(int64_t rows) {
  int64_t per = kNormRowsPerChunk;
  if ((rows + per - 1) / per > kNormMaxChunks) per = (rows + kNormMaxChunks - 1) / kNormMaxChunks;
  return per;
}

// Per-chunk partial sums of the weight and bias gradients.
inline size_t norm_backward_workspace_bytes(ScalarType dtype, int64_t rows, int64_t cols) {
  const int64_t per = norm_rows_per_chunk(rows);
  const int64_t nchunks = rows == 0 ? 1 : (rows + per - 1) / per;
  return 2 * static_cast<size_t>(nchunks * cols) * (dtype == ScalarType::Double ? 8 : 4);
}

// ---- embedding backward (embedding.cu) ----
// Each array of the workspace starts on a 256-byte boundary.
inline size_t workspace_align_up(size_t n) { return (n + 255) / 256 * 256; }

// counts, offsets, cursor: [num_weights] ints; positions: [n] ints.
inline size_t embedding_backward_workspace_bytes(int64_t n, int64_t num_weights) {
  return 3 * workspace_align_up(static_cast<size_t>(num_weights) * sizeof(int)) +
         workspace_align_up(static_cast<size_t>(n) * sizeof(int));
}

// ---- cross entropy forward (loss.cu) ----
// One loss per row, reduced in a second pass.
inline size_t cross_entropy_workspace_bytes(ScalarType dtype, int64_t n) {
  return static_cast<size_t>(n) * (dtype == ScalarType::Double ? 8 : 4);
}

// ---- fused attention (attention.cu) ----
// No workspace: each warp keeps its row's head-dim slice in registers, 32 lanes by at most this
// many elements each, so the head dim E is at most 32 * kAttentionMaxChunks.
constexpr int64_t kAttentionMaxChunks = 8;
constexpr int64_t kAttentionMaxHeadDim = 32 * kAttentionMaxChunks;
// logsumexp's rows are padded to a multiple of this (PyTorch's kAlignLSE).
constexpr int64_t kAttentionLseAlign = 32;

}  // namespace remat::kernels::cuda
