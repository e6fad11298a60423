// Mirrors torchgen's generated NativeFunctions.h for TensorShape.cpp's view ops (view, reshape,
// transpose, t, permute, slice, unbind.int, unsqueeze, squeeze, expand, detach, as_strided, select,
// narrow, view_as, split_with_sizes, split, chunk, and _unsafe_view, which aliases without being a
// view): their Defs, so that each op's name, schema
// and kernel exist once. A view changes metadata alone, so one kernel (ops/view_ops.cpp) serves
// every backend: a Def names it `kernel`, registered at CPU, CUDA and Meta; a composite's Def
// names it `composite` (CompositeImplicitAutograd: ops/composite.h). A view allocates nothing;
// reshape and contiguous of a layout no view can express copy through clone.
#pragma once

#include <optional>
#include <type_traits>
#include <vector>

#include "engine/core/tensor.h"
#include "ops/autograd/as_strided_backward.h"
#include "ops/autograd/derivative_rules.h"
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
std::vector<Tensor> split_kernel(const Tensor& self, int64_t split_size, int64_t dim);
Tensor t_kernel(const Tensor& self);
Tensor unsafe_view_kernel(const Tensor& self, const Shape& size);
// ATen/native/ComplexHelper.h's views (in ops/view_ops.cpp)
Tensor view_as_real_kernel(const Tensor& self);
Tensor view_as_complex_kernel(const Tensor& self);
std::vector<Tensor> chunk_composite(const Tensor& self, int64_t chunks, int64_t dim);

// The table: X(NAME, OP, SCHEMA, KIND, FN) for each view op (NAME: the Def is structured_NAME; OP:
// the op's name after "aten::"; KIND: kernel, or composite).
#define REMAT_VIEW_DEFS(X) \
  X(view, "view", "(Tensor(a) self, int[] size) -> Tensor(a)", kernel, view_kernel) \
  X(reshape, "reshape", "(Tensor(a) self, int[] shape) -> Tensor(a)", composite, reshape_composite) \
  X(transpose, "transpose", "(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", kernel, transpose_kernel) \
  X(t, "t", "(Tensor(a) self) -> Tensor(a)", kernel, t_kernel) \
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
  X(split, "split", "(Tensor(a) self, int split_size, int dim=0) -> Tensor(a)[]", kernel, split_kernel) \
  X(chunk, "chunk", "(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]", composite, chunk_composite) \
  X(_unsafe_view, "_unsafe_view", "(Tensor self, int[] size) -> Tensor", kernel, unsafe_view_kernel) \
  X(view_as_real, "view_as_real", "(Tensor(a) self) -> Tensor(a)", kernel, view_as_real_kernel) \
  X(view_as_complex, "view_as_complex", "(Tensor(a) self) -> Tensor(a)", kernel, view_as_complex_kernel)

// A kernel's Def declares its derivative (defined below); a composite has none: its gradient comes
// from the ops it calls (CompositeImplicitAutograd).
#define REMAT_VIEW_DERIVATIVE_kernel static autograd::Derivative derivative();
#define REMAT_VIEW_DERIVATIVE_composite
#define REMAT_VIEW_DEF(NAME, OP, SCHEMA, KIND, FN)    \
  struct structured_##NAME {                          \
    using Sig = std::remove_pointer_t<decltype(&FN)>; \
    static constexpr const char* name = "aten::" OP;  \
    static constexpr const char* schema = SCHEMA;     \
    static constexpr auto KIND = &FN;                 \
    REMAT_VIEW_DERIVATIVE_##KIND                      \
  };
REMAT_VIEW_DEFS(REMAT_VIEW_DEF)
#undef REMAT_VIEW_DEF
#undef REMAT_VIEW_DERIVATIVE_kernel
#undef REMAT_VIEW_DERIVATIVE_composite

// ---- the views' derivatives (derivatives.yaml's entries), in the table's order: a view's
// gradient is the grad_output put back into self's shape. ----

// out = self with shape size
inline autograd::Derivative structured_view::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {reshape(c.grad(), c.meta(0).shape)}; });
}
// out = self with dims dim0 and dim1 swapped
inline autograd::Derivative structured_transpose::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {transpose(c.grad(), c.integer(1), c.integer(2))}; });
}
// out = self transposed (at most 2-D)
inline autograd::Derivative structured_t::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {remat::t(c.grad())}; });
}
// out.dim(i) = self.dim(dims[i]): the gradient takes the inverse permutation
inline autograd::Derivative structured_permute::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G {
    Shape dims = c.ints(1), inverse(dims.size());
    int64_t n = static_cast<int64_t>(dims.size());
    for (int64_t i = 0; i < n; ++i) inverse[dims[i] < 0 ? dims[i] + n : dims[i]] = i;
    return {permute(c.grad(), inverse)};
  });
}
// out = self[..., start:end:step, ...] along dim
inline autograd::Derivative structured_slice::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G {
    return {slice_backward(c.grad(), c.meta(0).shape, c.integer(1), c.integer(2), c.integer(3), c.integer(4))};
  });
}
// outs[i] = self.select(dim, i): the gradients, stacked (FunctionsManual.cpp unbind_backward)
// into one buffer; unused outputs arrive as zeros.
inline autograd::Derivative structured_unbind_int::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G {
    const Shape& in = c.meta(0).shape;
    int64_t dim = maybe_wrap_dim(c.integer(1), static_cast<int64_t>(in.size()), "aten::unbind");
    G parts;
    for (int64_t i = 0; i < in[dim]; ++i) parts.push_back(unsqueeze(c.grad(static_cast<size_t>(i)), dim));
    return {cat(parts, dim)};
  });
}
// out = self with a dim of size 1 inserted at dim
inline autograd::Derivative structured_unsqueeze::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {squeeze(c.grad(), c.integer(1))}; });
}
// out = self without dim (of size 1)
inline autograd::Derivative structured_squeeze::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {reshape(c.grad(), c.meta(0).shape)}; });
}
// out = self broadcast to size
inline autograd::Derivative structured_expand::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {sum_to(c.grad(), c.meta(0))}; });
}
// out = self, outside autograd
inline autograd::Derivative structured_detach::derivative() { return autograd::non_differentiable(); }
// out = self's storage read with geometry (size, stride, storage_offset)
inline autograd::Derivative structured_as_strided::derivative() {
  using namespace autograd;
  return with_geometry_of(rule({}, [](C c) -> G {
    const TensorGeometry& self = c.geometry(0);
    int64_t offset = c.is_none(3) ? self.storage_offset : c.integer(3);
    return {as_strided_backward(c.grad(), self, c.ints(1), c.ints(2), offset)};
  }), {0});
}
// out = self[..., index, ...] (dim removed)
inline autograd::Derivative structured_select::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G {
    const Shape& in = c.meta(0).shape;
    int64_t dim = maybe_wrap_dim(c.integer(1), static_cast<int64_t>(in.size()), "aten::select");
    int64_t index = c.integer(2) < 0 ? c.integer(2) + in[dim] : c.integer(2);
    return {slice_backward(unsqueeze(c.grad(), dim), in, dim, index, index + 1, 1)};
  });
}
// out[i] = consecutive pieces of self along dim, of sizes split_sizes[i]
inline autograd::Derivative structured_split_with_sizes::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G {
    G parts;
    for (size_t i = 0; i < c.ints(1).size(); ++i) parts.push_back(c.grad(i));
    return {cat(parts, c.integer(2))};
  });
}

// out[i] = consecutive pieces of self along dim, split_size long (the last one shorter)
inline autograd::Derivative structured_split::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G {
    const Shape& in = c.meta(0).shape;
    const int64_t dim = maybe_wrap_dim(c.integer(2), static_cast<int64_t>(in.size()), "aten::split");
    const int64_t split_size = c.integer(1);
    const size_t pieces = split_size == 0 ? 1 : static_cast<size_t>((in[dim] + split_size - 1) / split_size);
    G parts;
    for (size_t i = 0; i < pieces; ++i) parts.push_back(c.grad(i));
    return {cat(parts, dim)};
  });
}
// out = self's data with shape size, not a view (what matmul and reshape return from their copies)
inline autograd::Derivative structured__unsafe_view::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {reshape(c.grad(), c.meta(0).shape)}; });
}

// out = self's complex elements as pairs of reals [..., 2]: the gradient read back as complex
// (derivatives.yaml: view_as_complex(grad.contiguous()))
inline autograd::Derivative structured_view_as_real::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {view_as_complex(c.grad().contiguous())}; });
}
// out = self's pairs [..., 2] as complex elements: the gradient read back as pairs
// (derivatives.yaml: view_as_real(grad.contiguous().resolve_conj()); remat has no lazy conjugate)
inline autograd::Derivative structured_view_as_complex::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {view_as_real(c.grad().contiguous())}; });
}

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
