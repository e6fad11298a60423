// Mirrors ATen/native/Embedding.cpp (embedding, embedding_dense_backward) and the index checks of
// ATen/native/cpu/IndexKernel.cpp: row gathers and scatter-adds over a [V, D] table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/parallel.h"
#include "kernels/cpu/pointwise.h"

namespace remat::kernels::cpu {

// Position of the first index outside [0, limit), or -1 if all are in range.
inline int64_t first_index_out_of_range(const int64_t* indices, int64_t n, int64_t limit) {
  for (int64_t i = 0; i < n; ++i)
    if (indices[i] < 0 || indices[i] >= limit) return i;
  return -1;
}

// forward: out[i, :] = weight[indices[i], :]   (n indices, rows of D contiguous elements)
template <class T>
void embedding_forward(T* out, const T* weight, const int64_t* indices, int64_t n, int64_t D) {
  parallel_for(0, n, rows_grain(D), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      std::memcpy(out + i * D, weight + indices[i] * D, static_cast<size_t>(D) * sizeof(T));
  });
}

// forward (above): out[i, :] = weight[indices[i], :]
// backward: dweight = 0; dweight[indices[i], :] += dout[i, :] for i in order (repeated indices
// add up). Parallel over blocks of columns, so no two threads write one element and the sum
// order is fixed.
template <class T, class A = acc_t<T>>
void embedding_backward(A* dweight, const T* dout, const int64_t* indices, int64_t n, int64_t V, int64_t D) {
  parallel_for(0, D, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n + V, 1)), [&](int64_t j0, int64_t j1) {
    for (int64_t v = 0; v < V; ++v)
      for (int64_t j = j0; j < j1; ++j) dweight[v * D + j] = A(0);
    for (int64_t i = 0; i < n; ++i) {
      A* row = dweight + indices[i] * D;
      const T* g = dout + i * D;
      for (int64_t j = j0; j < j1; ++j) row[j] += A(g[j]);
    }
  });
}

}  // namespace remat::kernels::cpu
