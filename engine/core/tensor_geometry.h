// Mirrors ATen/TensorGeometry.h: a tensor's sizes, strides and storage offset without its data
// (what CopySlices and AsStridedBackward0 keep of the tensors they describe).
#pragma once

#include <cstdint>

#include "engine/core/tensor.h"

namespace remat {

struct TensorGeometry {
  Shape sizes;
  Shape strides;
  int64_t storage_offset = 0;

  TensorGeometry() = default;
  TensorGeometry(Shape sizes_, Shape strides_, int64_t storage_offset_)
      : sizes(std::move(sizes_)), strides(std::move(strides_)), storage_offset(storage_offset_) {}
  explicit TensorGeometry(const Tensor& t) : sizes(t.sizes()), strides(t.strides()), storage_offset(t.storage_offset()) {}

  int64_t numel() const { return shape_numel(sizes); }
};

}  // namespace remat
