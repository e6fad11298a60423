// Mirrors torch/csrc/autograd/FunctionsManual.cpp (as_strided_backward).
#include "ops/autograd/as_strided_backward.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "ops/functions.h"

namespace remat::ops::autograd {

namespace {

// Whether no two elements of the geometry are at one address (dims of size 1 aside).
bool non_overlapping(const Shape& sizes, const Shape& strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 1) dims.emplace_back(strides[d], sizes[d]);
  std::sort(dims.begin(), dims.end());
  int64_t span = 0;  // the furthest element the smaller strides reach
  for (const auto& [st, sz] : dims) {
    if (st <= span) return false;
    span += (sz - 1) * st;
  }
  return true;
}

int64_t last_element(const Shape& sizes, const Shape& strides, int64_t storage_offset) {
  int64_t last = storage_offset;
  for (size_t d = 0; d < sizes.size(); ++d) last += (sizes[d] - 1) * strides[d];
  return last;
}

}  // namespace

Tensor as_strided_backward(const Tensor& grad, const TensorGeometry& input, const Shape& size, const Shape& stride,
                           int64_t storage_offset) {
  TensorOptions options = TensorOptions().dtype(grad.dtype()).device(grad.device());
  if (grad.numel() == 0 || input.numel() == 0) return zeros(input.sizes, options);

  // An element read through a stride-0 dim gets the sum of the gradients of its reads.
  Shape view_sizes = size;
  Shape summed;
  for (size_t d = 0; d < size.size(); ++d) {
    if (stride[d] == 0 && size[d] > 1) {
      summed.push_back(static_cast<int64_t>(d));
      view_sizes[d] = 1;
    }
  }
  Tensor g = summed.empty() ? grad : sum(grad, summed, /*keepdim=*/true);
  REMAT_CHECK(non_overlapping(view_sizes, stride), "as_strided_backward: the view (sizes ", size, ", strides ", stride,
              ") reads some elements more than once; remat supports that only along dims of stride 0");
  REMAT_CHECK(non_overlapping(input.sizes, input.strides), "as_strided_backward: the input (sizes ", input.sizes,
              ", strides ", input.strides, ") has elements that share memory; its gradient is ambiguous");

  // Storage from the lowest to the highest element either geometry reaches.
  const int64_t lo = std::min(input.storage_offset, storage_offset);
  const int64_t hi = std::max(last_element(input.sizes, input.strides, input.storage_offset),
                              last_element(view_sizes, stride, storage_offset));
  Tensor storage = zeros({hi - lo + 1}, options);
  Tensor view_elements = as_strided(storage, view_sizes, stride, storage_offset - lo);
  copy_(view_elements, g);
  return as_strided(storage, input.sizes, input.strides, input.storage_offset - lo);
}

}  // namespace remat::ops::autograd
