// Mirrors ATen/native/TensorShape.cpp (view, transpose, permute, slice, unsqueeze, squeeze,
// expand, as_strided, select, narrow, view_as, unbind, split, chunk, detach), TensorUtils.cpp
// (computeStride) and the ADInplaceOrView kernels' as_view: the kernels and composites of the
// Defs of ops/view_defs.h, registered from them. A view shares its base's storage and version
// counter; the same kernel serves every backend since only metadata changes.
#include <algorithm>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/variable.h"
#include "engine/dispatch/library.h"
#include "ops/composite.h"
#include "ops/functions.h"
#include "ops/op_utils.h"
#include "ops/structured.h"
#include "ops/view_defs.h"

namespace remat::ops {
namespace {

using remat::autograd::CreationMeta;

// A view of self with new geometry, which autograd tracks as a view of self's base (PyTorch's
// ADInplaceOrView kernels call as_view; remat has no such key, so the view kernels do). A view
// made under no_grad must not be modified in place with grad on; neither may one of several
// views one op returns.
Tensor make_view(const Tensor& self, const Shape& sizes, const Shape& strides, int64_t storage_offset,
                 bool one_of_several = false, std::optional<ScalarType> dtype = std::nullopt) {
  Tensor out = make_alias(self, dtype.value_or(self.dtype()), sizes, strides, storage_offset);
  CreationMeta creation = !remat::autograd::GradMode::is_enabled() ? CreationMeta::NO_GRAD_MODE
                          : one_of_several                  ? CreationMeta::MULTI_OUTPUT_NODE
                                                            : CreationMeta::DEFAULT;
  remat::autograd::impl::as_view(self, out, creation);
  return out;
}

// Replaces one -1 by the size that keeps numel (infer_size).
Shape infer_size(const char* op, const Shape& shape, int64_t numel) {
  Shape out = shape;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      REMAT_CHECK(infer_at < 0, op, ": only one dimension can be inferred (shape ", shape, ")");
      infer_at = static_cast<int>(i);
    } else {
      REMAT_CHECK(out[i] >= 0, op, ": invalid shape dimension ", out[i], " in ", shape);
      known *= out[i];
    }
  }
  if (infer_at >= 0) {
    REMAT_CHECK(known != 0 && numel % known == 0, op, ": shape '", shape, "' is invalid for input of size ", numel);
    out[static_cast<size_t>(infer_at)] = numel / known;
  }
  REMAT_CHECK(shape_numel(out) == numel, op, ": shape '", shape, "' is invalid for input of size ", numel);
  return out;
}

// Strides for viewing (sizes, strides) as new_sizes without copying, if possible
// (ATen's computeStride): each run of merged old dims must be contiguous within itself.
std::optional<Shape> compute_view_strides(const Shape& sizes, const Shape& strides, const Shape& new_sizes) {
  Shape new_strides(new_sizes.size());
  if (shape_numel(sizes) == 0 || sizes.empty()) return contiguous_strides(new_sizes);
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

}  // namespace

// The kernels and composites of the Defs (declared in ops/view_defs.h).

Tensor view_kernel(const Tensor& self, const Shape& size) {
  Shape sizes = infer_size("aten::view", size, self.numel());
  auto strides = compute_view_strides(self.sizes(), self.strides(), sizes);
  REMAT_CHECK(strides.has_value(),
              "aten::view: view size is not compatible with input tensor's size and stride (at least one "
              "dimension spans across two contiguous subspaces). Use .reshape(...) instead. (input ",
              self.sizes(), " with strides ", self.strides(), ", view ", size, ")");
  return make_view(self, sizes, *strides, self.storage_offset());
}

// PyTorch's reshape: a view where one can express the shape, else a contiguous copy handed back
// through _unsafe_view (so that a dispatch mode sees clone and _unsafe_view, as in PyTorch).
Tensor reshape_composite(const Tensor& self, const Shape& shape) {
  Shape sizes = infer_size("aten::reshape", shape, self.numel());
  if (compute_view_strides(self.sizes(), self.strides(), sizes)) return view(self, sizes);
  return _unsafe_view(clone(self), sizes);
}

// _unsafe_view: view's geometry, but the result is no view (autograd's _base is unset, as for
// detach): PyTorch returns copies it has just made through it, which nothing else can see.
Tensor unsafe_view_kernel(const Tensor& self, const Shape& size) {
  Shape sizes = infer_size("aten::_unsafe_view", size, self.numel());
  auto strides = compute_view_strides(self.sizes(), self.strides(), sizes);
  REMAT_CHECK(strides.has_value(),
              "aten::_unsafe_view: view size is not compatible with input tensor's size and stride (input ",
              self.sizes(), " with strides ", self.strides(), ", size ", size, ")");
  Tensor out = make_alias(self, sizes, *strides, self.storage_offset());
  out.impl()->set_is_view(false);
  return out;
}

Tensor transpose_kernel(const Tensor& self, int64_t d0, int64_t d1) {
  int64_t n = self.dim();
  d0 = maybe_wrap_dim(d0, n, "aten::transpose");
  d1 = maybe_wrap_dim(d1, n, "aten::transpose");
  Shape sizes = self.sizes(), strides = self.strides();
  if (n > 0) {
    std::swap(sizes[d0], sizes[d1]);
    std::swap(strides[d0], strides[d1]);
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor t_kernel(const Tensor& self) {
  REMAT_CHECK(self.dim() <= 2, "aten::t: t() expects a tensor with <= 2 dimensions, but self is ", self.dim(), "D");
  if (self.dim() < 2) return make_view(self, self.sizes(), self.strides(), self.storage_offset());
  return transpose_kernel(self, 0, 1);
}

Tensor permute_kernel(const Tensor& self, const Shape& dims) {
  int64_t n = self.dim();
  REMAT_CHECK(static_cast<int64_t>(dims.size()) == n,
              "aten::permute: number of dims don't match in permute (input.dim() = ", n,
              " is not equal to len(dims) = ", dims.size(), ")");
  Shape sizes(n), strides(n);
  std::vector<bool> seen(n, false);
  for (int64_t i = 0; i < n; ++i) {
    int64_t d = maybe_wrap_dim(dims[i], n, "aten::permute");
    REMAT_CHECK(!seen[d], "aten::permute: repeated dim in permute (dims ", dims, ")");
    seen[d] = true;
    sizes[i] = self.sizes()[d];
    strides[i] = self.strides()[d];
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor slice_kernel(const Tensor& self, int64_t dim, int64_t start, int64_t end, int64_t step) {
  REMAT_CHECK(self.dim() > 0, "aten::slice: slice() cannot be applied to a 0-dim tensor.");
  dim = maybe_wrap_dim(dim, self.dim(), "aten::slice");
  REMAT_CHECK(step > 0, "aten::slice: slice step must be positive (got ", step, ")");
  int64_t size = self.sizes()[dim];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  Shape sizes = self.sizes(), strides = self.strides();
  sizes[dim] = (end - start + step - 1) / step;
  strides[dim] *= step;
  return make_view(self, sizes, strides, self.storage_offset() + start * self.strides()[dim]);
}

Tensor unsqueeze_kernel(const Tensor& self, int64_t dim) {
  dim = maybe_wrap_dim(dim, self.dim() + 1, "aten::unsqueeze");
  Shape sizes = self.sizes(), strides = self.strides();
  int64_t new_stride = dim >= self.dim() ? 1 : sizes[dim] * strides[dim];
  sizes.insert(sizes.begin() + dim, 1);
  strides.insert(strides.begin() + dim, new_stride);
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor squeeze_kernel(const Tensor& self, int64_t dim) {
  if (self.dim() == 0) return make_view(self, self.sizes(), self.strides(), self.storage_offset());
  dim = maybe_wrap_dim(dim, self.dim(), "aten::squeeze");
  Shape sizes = self.sizes(), strides = self.strides();
  if (sizes[dim] == 1) {
    sizes.erase(sizes.begin() + dim);
    strides.erase(strides.begin() + dim);
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor expand_kernel(const Tensor& self, const Shape& size) {
  REMAT_CHECK(size.size() >= static_cast<size_t>(self.dim()),
              "aten::expand: the number of sizes provided (", size.size(),
              ") must be greater or equal to the number of dimensions in the tensor (", self.dim(), ")");
  size_t n = size.size(), offset = n - static_cast<size_t>(self.dim());
  Shape sizes(n), strides(n);
  for (size_t i = 0; i < n; ++i) {
    if (i < offset) {
      REMAT_CHECK(size[i] >= 0, "aten::expand: The expanded size of the tensor (", size[i],
                  ") isn't allowed in a leading, non-existing dimension ", i);
      sizes[i] = size[i];
      strides[i] = 0;
      continue;
    }
    int64_t cur = self.sizes()[i - offset];
    int64_t want = size[i] == -1 ? cur : size[i];
    REMAT_CHECK(want >= 0, "aten::expand: The expanded size of the tensor (", want, ") is not allowed at dimension ",
                i, ": sizes must be non-negative, or -1 to keep a size.  Target sizes: ", size);
    REMAT_CHECK(cur == want || cur == 1, "aten::expand: The expanded size of the tensor (", want,
                ") must match the existing size (", cur, ") at non-singleton dimension ", i,
                ".  Target sizes: ", size, ".  Tensor sizes: ", self.sizes());
    sizes[i] = want;
    strides[i] = cur == want ? self.strides()[i - offset] : 0;
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor as_strided_kernel(const Tensor& self, const Shape& size, const Shape& stride,
                         std::optional<int64_t> storage_offset) {
  REMAT_CHECK(size.size() == stride.size(), "aten::as_strided: mismatch in length of strides and shape (sizes ", size,
              ", strides ", stride, ")");
  const int64_t offset = storage_offset.value_or(self.storage_offset());
  REMAT_CHECK(offset >= 0, "aten::as_strided: Tensor: invalid storage offset ", offset);
  int64_t last = offset;  // the highest element the view reaches
  bool empty = false;
  for (size_t d = 0; d < size.size(); ++d) {
    REMAT_CHECK(size[d] >= 0, "aten::as_strided: Trying to create tensor with negative dimension ", size[d], ": ", size);
    REMAT_CHECK(stride[d] >= 0, "aten::as_strided: as_strided: Negative strides are not supported at the moment, got "
                "strides: ", stride);
    empty = empty || size[d] == 0;
    last += (size[d] - 1) * stride[d];
  }
  // checkInBoundsForStorage
  const int64_t itemsize = static_cast<int64_t>(self.itemsize());
  const int64_t storage_bytes = static_cast<int64_t>(self.impl()->storage()->nbytes());
  REMAT_CHECK(empty || (last + 1) * itemsize <= storage_bytes, "aten::as_strided: setStorage: sizes ", size,
              ", strides ", stride, ", storage offset ", offset, ", and itemsize ", itemsize,
              " requiring a storage size of ", (last + 1) * itemsize, " are out of bounds for storage of size ",
              storage_bytes);
  return make_view(self, size, stride, offset);
}

Tensor select_kernel(const Tensor& self, int64_t dim, int64_t index) {
  REMAT_CHECK(self.dim() > 0, "aten::select: select() cannot be applied to a 0-dim tensor.");
  dim = maybe_wrap_dim(dim, self.dim(), "aten::select");
  const int64_t size = self.sizes()[dim];
  REMAT_CHECK(index >= -size && index < size, "aten::select: select(): index ", index,
              " out of range for tensor of size ", self.sizes(), " at dimension ", dim);
  if (index < 0) index += size;
  Shape sizes = self.sizes(), strides = self.strides();
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  return make_view(self, sizes, strides, self.storage_offset() + index * self.strides()[dim]);
}

Tensor narrow_composite(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  REMAT_CHECK(self.dim() > 0, "aten::narrow: narrow() cannot be applied to a 0-dim tensor.");
  dim = maybe_wrap_dim(dim, self.dim(), "aten::narrow");
  const int64_t size = self.sizes()[dim];
  if (start < 0) start += size;
  REMAT_CHECK(start >= 0 && length >= 0 && start + length <= size, "aten::narrow: start (", start, ") + length (",
              length, ") exceeds dimension size (", size, ").");
  return slice(self, dim, start, start + length, 1);
}

Tensor view_as_composite(const Tensor& self, const Tensor& other) { return view(self, other.sizes()); }

std::vector<Tensor> unbind_kernel(const Tensor& self, int64_t dim) {
  REMAT_CHECK(self.dim() > 0, "aten::unbind: Dimension specified as 0 but tensor has no dimensions");
  dim = maybe_wrap_dim(dim, self.dim(), "aten::unbind");
  Shape sizes = self.sizes(), strides = self.strides();
  sizes.erase(sizes.begin() + dim);
  strides.erase(strides.begin() + dim);
  std::vector<Tensor> out;
  for (int64_t i = 0; i < self.sizes()[dim]; ++i)
    out.push_back(make_view(self, sizes, strides, self.storage_offset() + i * self.strides()[dim], true));
  return out;
}

std::vector<Tensor> split_with_sizes_kernel(const Tensor& self, const Shape& split_sizes, int64_t dim) {
  REMAT_CHECK(self.dim() > 0, "aten::split_with_sizes: split expects at least a 1-dimensional tensor");
  dim = maybe_wrap_dim(dim, self.dim(), "aten::split_with_sizes");
  int64_t total = 0;
  for (int64_t s : split_sizes) {
    REMAT_CHECK(s >= 0, "aten::split_with_sizes: split_with_sizes expects split_sizes have only non-negative entries, "
                "but got split_sizes=", split_sizes);
    total += s;
  }
  REMAT_CHECK(total == self.sizes()[dim], "aten::split_with_sizes: split_with_sizes expects split_sizes to sum exactly to ",
              self.sizes()[dim], " (input tensor's size at dimension ", dim, "), but got split_sizes=", split_sizes);
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : split_sizes) {
    Shape sizes = self.sizes();
    sizes[dim] = s;
    out.push_back(make_view(self, sizes, self.strides(), self.storage_offset() + start * self.strides()[dim], true));
    start += s;
  }
  return out;
}

// The last piece is smaller when split_size does not divide the size.
std::vector<Tensor> split_kernel(const Tensor& self, int64_t split_size, int64_t dim) {
  REMAT_CHECK(self.dim() > 0, "aten::split: split expects at least a 1-dimensional tensor");
  const int64_t size = self.sizes()[maybe_wrap_dim(dim, self.dim(), "aten::split")];
  REMAT_CHECK(split_size > 0 || (split_size == 0 && size == 0), "aten::split: split_size can only be 0 if dimension "
              "size is 0, but got dimension size of ", size, " (split_size ", split_size, ")");
  Shape sizes;
  for (int64_t start = 0; start < size; start += split_size) sizes.push_back(std::min(split_size, size - start));
  if (sizes.empty()) sizes.push_back(0);
  return split_with_sizes_kernel(self, sizes, dim);
}

std::vector<Tensor> chunk_composite(const Tensor& self, int64_t chunks, int64_t dim) {
  REMAT_CHECK(self.dim() > 0, "aten::chunk: chunk expects at least a 1-dimensional tensor");
  REMAT_CHECK(chunks > 0, "aten::chunk: chunk expects `chunks` to be greater than 0, got: ", chunks);
  const int64_t size = self.sizes()[maybe_wrap_dim(dim, self.dim(), "aten::chunk")];
  return split(self, (size + chunks - 1) / chunks, dim);
}

// detach: same data, no history. Not flagged as a view: in-place on it is in-place on data
// autograd no longer tracks (the version counter still catches misuse).
Tensor detach_kernel(const Tensor& self) {
  Tensor out = make_alias(self, self.sizes(), self.strides(), self.storage_offset());
  out.impl()->set_is_view(false);
  return out;
}

// Each Def's schema, and its kernel at every backend (or its composite).
// ATen/native/ComplexHelper.h: view_as_real reads each complex element as two reals (the last
// dim, stride 1), view_as_complex the reverse; the storage is shared, strides and offset scale by 2.
Tensor view_as_real_kernel(const Tensor& self) {
  REMAT_CHECK(isComplexType(self.dtype()), "aten::view_as_real: view_as_real is only supported for complex tensors "
              "(got ", toString(self.dtype()), ")");
  Shape sizes = self.sizes(), strides = self.strides();
  for (int64_t& s : strides) s *= 2;
  sizes.push_back(2);
  strides.push_back(1);
  return make_view(self, sizes, strides, self.storage_offset() * 2, false, toRealValueType(self.dtype()));
}

Tensor view_as_complex_kernel(const Tensor& self) {
  const char* op = "aten::view_as_complex";
  REMAT_CHECK(self.dtype() == kFloat || self.dtype() == kDouble, op,
              ": view_as_complex is only supported for float and double tensors, but got a tensor of scalar type: ",
              toString(self.dtype()));
  REMAT_CHECK(self.dim() > 0, op, ": Input tensor must have one or more dimensions");
  REMAT_CHECK(self.sizes().back() == 2, op, ": Tensor must have a last dimension of size 2 (got shape ",
              self.sizes(), ")");
  REMAT_CHECK(self.strides().back() == 1, op, ": Tensor must have a last dimension with stride 1 (got strides ",
              self.strides(), ")");
  Shape sizes(self.sizes().begin(), self.sizes().end() - 1), strides(self.strides().begin(), self.strides().end() - 1);
  for (int64_t& s : strides) {
    REMAT_CHECK(s % 2 == 0, op, ": Tensor must have a stride divisible by 2 for all but last dimension (got strides ",
                self.strides(), ")");
    s /= 2;
  }
  REMAT_CHECK(self.storage_offset() % 2 == 0, op, ": Tensor must have a storage_offset divisible by 2 (got ",
              self.storage_offset(), ")");
  return make_view(self, sizes, strides, self.storage_offset() / 2, false, toComplexType(self.dtype()));
}

REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_view_def([&](auto def) {
    using Def = typename decltype(def)::type;
    structured::define<Def>(m, {});
    if constexpr (HasViewKernel<Def>::value) {
      for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::Meta})
        m.impl(Def::name, k, KernelFunction::makeFromUnboxedFunction<Def::kernel>());
    } else {
      impl_composite(m, Def::name, KernelFunction::makeFromUnboxedFunction<Def::composite>());
    }
  });
}

}  // namespace remat::ops
