// Mirrors torchgen's generated NativeFunctions.h for TensorShape.cpp's view ops (view, reshape,
// transpose, permute, slice, unbind.int, unsqueeze, squeeze, expand, detach, as_strided, select,
// narrow, view_as, split_with_sizes, split, chunk): their Defs, so that each op's name, schema
// and kernel exist once. A view changes metadata alone, so one kernel (ops/view_ops.cpp) serves
// every backend: a Def names it `kernel`, registered at CPU, CUDA and Meta; a composite's Def
// names it `composite` (CompositeImplicitAutograd: ops/composite.h). A view allocates nothing;
// reshape and contiguous of a layout no view can express copy through clone.
#pragma once

#include <optional>
#include <type_traits>
#include <vector>

#include "engine/core/tensor.h"
#include "ops/structured.h"

namespace remat::ops {

// The kernels (ops/view_ops.cpp).
Tensor view_kernel(const Tensor& self, const Shape& size);
Tensor reshape_composite(const Tensor& self, const Shape& shape);
Tensor transpose_kernel(const Tensor& self, int64_t dim0, int64_t dim1);
Tensor permute_kernel(const Tensor& self, const Shape& dims);
Tensor slice_kernel(const Tensor& self, int64_t dim, int64_t start, int64_t end, int64_t step);
std::vector<Tensor> unbind_kernel(const Tensor& self, int64_t dim);
Tensor unsqueeze_kernel(const Tensor& self, int64_t dim);
Tensor squeeze_kernel(const Tensor& self, int64_t dim);
Tensor expand_kernel(const Tensor& self, const Shape& size);
Tensor detach_kernel(const Tensor& self);
Tensor as_strided_kernel(const Tensor& self, const Shape& size, const Shape& stride, std::optional<int64_t> storage_offset);
Tensor select_kernel(const Tensor& self, int64_t dim, int64_t index);
Tensor narrow_composite(const Tensor& self, int64_t dim, int64_t start, int64_t length);
Tensor view_as_composite(const Tensor& self, const Tensor& other);
std::vector<Tensor> split_with_sizes_kernel(const Tensor& self, const Shape& split_sizes, int64_t dim);
std::vector<Tensor> split_composite(const Tensor& self, int64_t split_size, int64_t dim);
std::vector<Tensor> chunk_composite(const Tensor& self, int64_t chunks, int64_t dim);

// The table: X(NAME, OP, SCHEMA, KIND, FN) for each view op (NAME: the Def is structured_NAME; OP:
// the op's name after "aten::"; KIND: kernel, or composite).
#define REMAT_VIEW_DEFS(X) \
  X(view, "view", "(Tensor(a) self, int[] size) -> Tensor(a)", kernel, view_kernel) \
  X(reshape, "reshape", "(Tensor(a) self, int[] shape) -> Tensor(a)", composite, reshape_composite) \
  X(transpose, "transpose", "(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", kernel, transpose_kernel) \
  X(permute, "permute", "(Tensor(a) self, int[] dims) -> Tensor(a)", kernel, permute_kernel) \
  X(slice, "slice", "(Tensor(a) self, int dim=0, int start=0, int end=9223372036854775807, int step=1) -> Tensor(a)", kernel, slice_kernel) \
  X(unbind_int, "unbind.int", "(Tensor(a) self, int dim=0) -> Tensor(a)[]", kernel, unbind_kernel) \
  X(unsqueeze, "unsqueeze", "(Tensor(a) self, int dim) -> Tensor(a)", kernel, unsqueeze_kernel) \
  X(squeeze, "squeeze", "(Tensor(a) self, int dim) -> Tensor(a)", kernel, squeeze_kernel) \
  X(expand, "expand", "(Tensor(a) self, int[] size) -> Tensor(a)", kernel, expand_kernel) \
  X(detach, "detach", "(Tensor(a) self) -> Tensor(a)", kernel, detach_kernel) \
  X(as_strided, "as_strided", "(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> Tensor(a)", kernel, as_strided_kernel) \
  X(select, "select", "(Tensor(a) self, int dim, int index) -> Tensor(a)", kernel, select_kernel) \
  X(narrow, "narrow", "(Tensor(a) self, int dim, int start, int length) -> Tensor(a)", composite, narrow_composite) \
  X(view_as, "view_as", "(Tensor(a) self, Tensor other) -> Tensor(a)", composite, view_as_composite) \
  X(split_with_sizes, "split_with_sizes", "(Tensor(a) self, int[] split_sizes, int dim=0) -> Tensor(a)[]", kernel, split_with_sizes_kernel) \
  X(split, "split", "(Tensor(a) self, int split_size, int dim=0) -> Tensor(a)[]", composite, split_composite) \
  X(chunk, "chunk", "(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]", composite, chunk_composite)

#define REMAT_VIEW_DEF(NAME, OP, SCHEMA, KIND, FN)    \
  struct structured_##NAME {                          \
    using Sig = std::remove_pointer_t<decltype(&FN)>; \
    static constexpr const char* name = "aten::" OP;  \
    static constexpr const char* schema = SCHEMA;     \
    static constexpr auto KIND = &FN;                 \
  };
REMAT_VIEW_DEFS(REMAT_VIEW_DEF)
#undef REMAT_VIEW_DEF

// Whether a view's Def names a kernel (else a composite).
template <class Def, class = void>
struct HasViewKernel : std::false_type {};
template <class Def>
struct HasViewKernel<Def, std::void_t<decltype(Def::kernel)>> : std::true_type {};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_view_def(const F& f) {
#define REMAT_VIEW_DEF_TAG(NAME, ...) f(structured::DefTag<structured_##NAME>{});
  REMAT_VIEW_DEFS(REMAT_VIEW_DEF_TAG)
#undef REMAT_VIEW_DEF_TAG
}

}  // namespace remat::ops
