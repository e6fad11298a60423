// Mirrors torch/csrc/autograd/FunctionsManual.cpp (as_strided_backward): the gradient of
// as_strided(input, size, stride, storage_offset) with respect to input, written with
// differentiable dispatcher ops (so create_graph records it). AsStridedBackward0 runs it, and so
// does the grad_fn a view gets back after an in-place op on its base.
#pragma once

#include "engine/core/tensor_geometry.h"

namespace remat::ops::autograd {

// grad has the view's sizes; input is the geometry of as_strided's input. The gradient goes where
// the view's elements are in storage and is read back where the input's are. An element the view
// reads through a stride-0 dim (an expanded view) gets the sum. Other geometries that reuse an
// element, in the view or in the input, throw (PyTorch handles them by counting).
Tensor as_strided_backward(const Tensor& grad, const TensorGeometry& input, const Shape& size, const Shape& stride,
                           int64_t storage_offset);

}  // namespace remat::ops::autograd
