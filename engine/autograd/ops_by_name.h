// The few ops the engine itself needs, called through the dispatcher by name (the engine knows
// no concrete op, as c10 does). Boxed calls: these are off the per-op hot path.
#pragma once

#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace remat::autograd::ops_by_name {

Tensor add(const Tensor& a, const Tensor& b);     // aten::add
void add_(const Tensor& self, const Tensor& other);  // aten::add_
Tensor ones_like(const Tensor& t);                // aten::ones_like
Tensor zeros_like(const Tensor& t);               // aten::zeros_like
Tensor clone(const Tensor& t);                    // aten::clone
Tensor sum_to_size(const Tensor& t, const Shape& shape);  // aten::sum_to_size
Tensor to_dtype(const Tensor& t, ScalarType dtype);       // aten::_to_copy
void copy_(const Tensor& self, const Tensor& src);        // aten::copy_
Tensor as_strided(const Tensor& t, const Shape& size, const Shape& stride, int64_t storage_offset);  // aten::as_strided

}  // namespace remat::autograd::ops_by_name
