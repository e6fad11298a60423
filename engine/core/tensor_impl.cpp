// Mirrors c10/core/TensorImpl.cpp.
#include "engine/core/tensor_impl.h"

#include "engine/core/safe_numerics.h"

namespace remat {

TensorImpl::TensorImpl(intrusive_ptr<StorageImpl> storage, ScalarType dtype, Shape sizes,
                       Shape strides, int64_t storage_offset)
    : storage_(std::move(storage)), sizes_(std::move(sizes)), strides_(std::move(strides)),
      storage_offset_(storage_offset), dtype_(dtype),
      key_set_(DispatchKeySet(backendKey(storage_->device().type))) {
  refresh_numel_and_contiguity();
}

TensorImpl::~TensorImpl() = default;

void TensorImpl::set_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta) {
  autograd_meta_ = std::move(meta);
}

void TensorImpl::set_sizes_and_strides(Shape sizes, Shape strides) {
  sizes_ = std::move(sizes);
  strides_ = std::move(strides);
  refresh_numel_and_contiguity();
}

void TensorImpl::refresh_numel_and_contiguity() {
  numel_ = shape_numel(sizes_);
  // Contiguous = row-major, ignoring the strides of size-1 dims (as c10 does).
  is_contiguous_ = true;
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (sizes_[d] == 1) continue;
    if (strides_[d] != expected) {
      is_contiguous_ = false;
      break;
    }
    expected *= sizes_[d];
  }
}

Shape contiguous_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t s = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = s;
    // The product past the first dimension is no stride: only the ones stored must fit.
    if (i > 0)
      REMAT_CHECK(!mul_overflows(s, sizes[i] > 1 ? sizes[i] : 1, &s), "shape ", sizes,
                  ": the contiguous strides overflow int64");
  }
  return strides;
}

int64_t shape_numel(const Shape& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes)
    REMAT_CHECK(!mul_overflows(n, s, &n), "shape ", sizes, ": the number of elements overflows int64");
  return n;
}

}  // namespace remat
