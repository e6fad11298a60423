// Shared pieces of the meta functions and backend kernels: shape checks, broadcasting and type
// promotion (ATen/ExpandUtils.h, TensorIterator's common dtype), and the LoopShape a CPU
// kernel iterates (TensorIterator).
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "kernels/cpu/loops.h"

namespace remat::ops {

// What a meta function infers: the output's geometry.
struct TensorMeta {
  Shape sizes;
  ScalarType dtype;
  Device device;
};

// Allocates an output for meta on meta.device (no data for Meta tensors).
Tensor empty_from(TensorMeta meta);

// PyTorch's broadcasting; throws naming op and both shapes.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// All defined tensors on one device; throws naming the op and both devices.
Device common_device(const char* op, std::initializer_list<const Tensor*> tensors);
void check_defined(const char* op, const Tensor& t, const char* name);
void check_dim(const char* op, const Tensor& t, int64_t dim, const char* name);
void check_floating(const char* op, const Tensor& t, const char* name);
void check_same_dtype(const char* op, const Tensor& a, const Tensor& b);
// A tensor written in place must not have two elements at one address (an expanded tensor), as
// PyTorch's assert_no_internal_overlap. (fill_ and zero_ skip this: they are idempotent.)
void check_no_internal_overlap(const char* op, const Tensor& self);

// Iteration space of out with each input broadcast to out's sizes (stride 0 where broadcast).
kernels::cpu::LoopShape make_loop(const Tensor& out, std::initializer_list<const Tensor*> inputs);
// Element strides of t broadcast to sizes (right-aligned).
Shape broadcast_strides(const Tensor& t, const Shape& sizes);

// A copy between tensors of one complex dtype as a copy of reals: t's complex elements as pairs
// [..., 2] (view_as_real's geometry, without the op), t broadcast to sizes first.
Tensor complex_as_real(const Tensor& t, const Shape& sizes);

// Row-major size of dims [begin, end).
int64_t prod(const Shape& s, size_t begin, size_t end);

}  // namespace remat::ops
