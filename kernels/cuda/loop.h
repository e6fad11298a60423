// Mirrors ATen/cuda/detail/OffsetCalculator.cuh's input: the iteration space of an elementwise
// kernel, one element stride per operand and dim (0 where broadcast), output first. Built on
// the host from ops::make_loop (already coalesced) and passed to kernels by value.
#pragma once

#include <cstdint>

namespace remat::kernels::cuda {

constexpr int kMaxDims = 16;
constexpr int kMaxOperands = 4;  // output first, then inputs

struct StridedLoop {
  int ndim = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};  // in elements

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= sizes[d];
    return n;
  }
  // Every one of the first `noperands` operands walks memory with stride 1 (after coalescing).
  bool is_contiguous(int noperands) const {
    if (ndim == 0) return true;
    if (ndim != 1) return false;
    for (int i = 0; i < noperands; ++i)
      if (strides[i][0] != 1) return false;
    return true;
  }
};

// A contiguous loop over n elements.
inline StridedLoop contiguous_loop(int64_t n, int noperands) {
  StridedLoop s;
  s.ndim = 1;
  s.sizes[0] = n;
  for (int i = 0; i < noperands; ++i) s.strides[i][0] = 1;
  return s;
}

}  // namespace remat::kernels::cuda
