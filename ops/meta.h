// The meta functions (input checks + output geometry) shared by every backend's kernels: the
// CPU and Meta kernels in ops/*.cpp and the CUDA kernels in ops/cuda/*.cpp use the same ones,
// as PyTorch's structured kernels share one meta function. Each is defined beside its CPU
// kernel (ops/pointwise.cpp, reduction.cpp, linalg.cpp, copy.cpp, factory.cpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/core/tensor.h"
#include "ops/op_utils.h"

namespace remat::ops {

// ---- ops/pointwise.cpp ----
TensorMeta binary_meta(const char* op, const Tensor& a, const Tensor& b);
TensorMeta unary_meta(const char* op, const Tensor& a, bool floating_only);
// An in-place op writes into self: the other operand must broadcast to self's shape.
void inplace_meta(const char* op, const Tensor& self, const Tensor& other);
// tensor op scalar: the scalar does not promote a floating tensor (a "wrapped number"); an
// integer tensor becomes float for a fractional scalar or true division (PyTorch's result_type).
TensorMeta scalar_meta(const char* op, const Tensor& a, double s, bool true_div = false);
void check_gelu_approximate(const std::string& approximate);
void check_bool_mask(const char* op, const Tensor& mask);
TensorMeta where_meta(const Tensor& cond, const Tensor& a, const Tensor& b);
TensorMeta masked_fill_meta(const Tensor& self, const Tensor& mask);

// ---- ops/reduction.cpp ----
// Which dims are reduced (all when dims is None or empty).
std::vector<bool> reduced_mask(const char* op, const Tensor& self, const std::optional<Shape>& dims);
Shape reduced_shape(const Tensor& self, const std::vector<bool>& mask, bool keepdim);
TensorMeta reduce_meta(const char* op, const Tensor& self, const std::optional<Shape>& dims, bool keepdim,
                       bool floating_only);
void check_amax_nonempty(const Tensor& self, int64_t dim);

// ---- ops/linalg.cpp ----
// How a strided 2-D operand [rows, cols] is passed to GEMM: row-major (trans=false, ld = stride
// of rows) or as the transpose of a row-major matrix (trans=true, ld = stride of cols); an
// undefined t when neither fits (the caller makes it contiguous).
struct GemmOperand {
  Tensor t;  // the data (possibly a contiguous copy)
  bool trans;
  int64_t ld;
};
GemmOperand gemm_operand(const Tensor& m, int64_t row_stride, int64_t col_stride, int64_t rows, int64_t cols);
// op: the op named in errors (addmm checks its two matrices as mm does).
TensorMeta mm_meta(const Tensor& a, const Tensor& b, const char* op = "aten::mm");
TensorMeta bmm_meta(const Tensor& a, const Tensor& b);
TensorMeta addmm_meta(const Tensor& bias, const Tensor& a, const Tensor& b);

// ---- ops/copy.cpp ----
void check_copy(const Tensor& self, const Tensor& src);
TensorMeta cat_meta(const std::vector<Tensor>& tensors, int64_t dim);
void check_triu(const Tensor& self);

// ---- ops/factory.cpp ----
void check_uniform(const Tensor& self, double from, double to);
void check_normal(const Tensor& self, double std);

}  // namespace remat::ops
