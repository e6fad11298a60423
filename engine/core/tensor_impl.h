// Mirrors c10/core/TensorImpl.h: sizes, strides, storage offset, dtype, device, autograd meta.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/intrusive_ptr.h"
#include "engine/core/scalar_type.h"
#include "engine/core/storage.h"
#include "engine/core/dispatch_key_set.h"

namespace remat {

using Shape = std::vector<int64_t>;

// Implemented by autograd (engine/autograd/variable.h); core only owns it.
struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
};

class TensorImpl : public intrusive_ptr_target {
 public:
  TensorImpl(intrusive_ptr<StorageImpl> storage, ScalarType dtype, Shape sizes, Shape strides,
             int64_t storage_offset);
  ~TensorImpl() override;

  const Shape& sizes() const { return sizes_; }
  const Shape& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t numel() const { return numel_; }
  int64_t storage_offset() const { return storage_offset_; }
  ScalarType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  bool is_contiguous() const { return is_contiguous_; }
  size_t itemsize() const { return elementSize(dtype_); }
  int64_t nbytes() const { return numel_ * static_cast<int64_t>(itemsize()); }

  const intrusive_ptr<StorageImpl>& storage() const { return storage_; }
  void* data() const {
    return storage_->data() == nullptr
               ? nullptr
               : static_cast<char*>(storage_->data()) + storage_offset_ * static_cast<int64_t>(itemsize());
  }

  uint32_t version() const { return storage_->version(); }
  void bump_version() { storage_->bump_version(); }

  // The keys this tensor contributes to a call: its backend, plus Autograd when it requires grad.
  DispatchKeySet key_set() const { return key_set_; }
  void set_autograd_key(bool on) {
    key_set_ = on ? key_set_.add(DispatchKey::Autograd) : key_set_.remove(DispatchKey::Autograd);
  }

  AutogradMetaInterface* autograd_meta() const { return autograd_meta_.get(); }
  void set_autograd_meta(std::unique_ptr<AutogradMetaInterface> meta);

  // Set by view ops: this tensor aliases another tensor's storage (in-place on it needs care).
  bool is_view() const { return is_view_; }
  void set_is_view(bool v) { is_view_ = v; }

  // Recomputes is_contiguous after sizes/strides change.
  void set_sizes_and_strides(Shape sizes, Shape strides);

 private:
  void refresh_numel_and_contiguity();

  intrusive_ptr<StorageImpl> storage_;
  Shape sizes_;
  Shape strides_;
  int64_t storage_offset_;
  int64_t numel_ = 1;
  ScalarType dtype_;
  bool is_contiguous_ = true;
  bool is_view_ = false;
  DispatchKeySet key_set_;
  std::unique_ptr<AutogradMetaInterface> autograd_meta_;
};

// Row-major strides for sizes.
Shape contiguous_strides(const Shape& sizes);
int64_t shape_numel(const Shape& sizes);

}  // namespace remat
