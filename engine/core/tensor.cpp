// Mirrors ATen/core/TensorBase.h accessors and ATen/EmptyTensor.cpp (empty tensors).
#include "engine/core/tensor.h"

#include "engine/core/safe_numerics.h"

namespace remat {

int64_t maybe_wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  REMAT_CHECK(dim >= lo && dim <= hi, op, ": Dimension out of range (expected to be in range of [",
              lo, ", ", hi, "], but got ", dim, ")");
  return dim < 0 ? dim + (ndim == 0 ? 1 : ndim) : dim;
}

int64_t Tensor::size(int64_t d) const { return sizes()[maybe_wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[maybe_wrap_dim(d, dim(), "stride")]; }

std::string Tensor::toString() const {
  if (!defined()) return "UndefinedType";
  std::string backend = device().is_cuda() ? "CUDA" : device().is_meta() ? "Meta" : "CPU";
  return backend + remat::toString(dtype()) + "Type";
}

std::ostream& operator<<(std::ostream& os, const Shape& shape) {
  detail::write(os, shape);
  return os;
}

Tensor make_empty_strided(Shape sizes, Shape strides, ScalarType dtype, Device device) {
  int64_t extent = 1;  // elements the storage must hold for these strides
  for (size_t i = 0; i < sizes.size(); ++i) {
    REMAT_CHECK(sizes[i] >= 0, "empty: Trying to create tensor with negative dimension ", sizes[i],
                ": ", sizes);
    if (sizes[i] == 0) { extent = 0; break; }
    int64_t step = 0;
    REMAT_CHECK(!mul_overflows(sizes[i] - 1, strides[i], &step) && !add_overflows(extent, step, &extent),
                "empty: a tensor of shape ", sizes, " needs more elements than int64 counts");
  }
  int64_t bytes = 0;
  REMAT_CHECK(!mul_overflows(extent, static_cast<int64_t>(elementSize(dtype)), &bytes), "empty: a tensor of shape ",
              sizes, " and dtype ", toString(dtype), " needs more bytes than int64 counts (", extent, " elements of ",
              elementSize(dtype), " bytes)");
  auto storage = make_intrusive<StorageImpl>(static_cast<size_t>(bytes), device);
  return Tensor(make_intrusive<TensorImpl>(std::move(storage), dtype, std::move(sizes), std::move(strides), 0));
}

Tensor make_empty(Shape sizes, ScalarType dtype, Device device) {
  Shape strides = contiguous_strides(sizes);
  return make_empty_strided(std::move(sizes), std::move(strides), dtype, device);
}

Tensor make_alias(const Tensor& base, const Shape& sizes, const Shape& strides, int64_t storage_offset) {
  return make_alias(base, base.dtype(), sizes, strides, storage_offset);
}

Tensor make_alias(const Tensor& base, ScalarType dtype, const Shape& sizes, const Shape& strides,
                  int64_t storage_offset) {
  auto impl = make_intrusive<TensorImpl>(base.impl()->storage(), dtype, sizes, strides, storage_offset);
  impl->set_is_view(true);
  return Tensor(std::move(impl));
}

void claim_memory(const Tensor& t, MemoryCategory category) {
  if (t.defined() && t.impl()->storage()) t.impl()->storage()->claim(category);
}

}  // namespace remat
