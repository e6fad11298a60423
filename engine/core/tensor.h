// Mirrors ATen/core/TensorBase.h and ATen/core/TensorBody.h: the Tensor handle.
//
// A Tensor is a reference-counted handle to a TensorImpl; copying a Tensor shares the data.
// Accessors live in engine/core, autograd methods in engine/autograd/variable.cpp, and the op
// methods (x.sin(), x + y) in ops/tensor_methods.cpp, as PyTorch splits TensorBase and Tensor.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/core/device.h"
#include "engine/core/error.h"
#include "engine/core/intrusive_ptr.h"
#include "engine/core/scalar_type.h"
#include "engine/core/tensor_impl.h"

namespace remat {

namespace autograd {
class Node;
}
class Generator;

// Mirrors c10/core/TensorOptions.h. Chainable: TensorOptions().dtype(kDouble).requires_grad(true).
class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(ScalarType dtype) : dtype_(dtype), has_dtype_(true) {}  // NOLINT: zeros({2}, kDouble)
  TensorOptions(Device device) : device_(device) {}   // NOLINT: zeros({2}, Device(kMeta))
  TensorOptions(DeviceType type) : device_(type) {}   // NOLINT: zeros({2}, kMeta)

  TensorOptions dtype(ScalarType d) const { TensorOptions o = *this; o.dtype_ = d; o.has_dtype_ = true; return o; }
  TensorOptions device(Device d) const { TensorOptions o = *this; o.device_ = d; return o; }
  TensorOptions requires_grad(bool r) const { TensorOptions o = *this; o.requires_grad_ = r; return o; }
  ScalarType dtype() const { return dtype_; }  // kFloat, the default dtype, unless one was set
  bool has_dtype() const { return has_dtype_; }  // whether one was set (arange infers it otherwise)
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  ScalarType dtype_ = kFloat;
  bool has_dtype_ = false;
  Device device_ = Device{kCPU};
  bool requires_grad_ = false;
};
inline TensorOptions dtype(ScalarType d) { return TensorOptions().dtype(d); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool r = true) { return TensorOptions().requires_grad(r); }

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(intrusive_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  // c10's TensorBase(unsafe_borrow_t, rhs): a handle to t's impl that holds no reference. It
  // must not outlive t, and is given up with unsafeReleaseTensorImpl() instead of being
  // destroyed (IValue::unsafe_borrow uses it).
  struct unsafe_borrow_t {};
  Tensor(unsafe_borrow_t, const Tensor& t) : impl_(intrusive_ptr<TensorImpl>::reclaim(t.impl_.get())) {}
  TensorImpl* unsafeReleaseTensorImpl() { return impl_.release(); }

  // ---- metadata (engine/core/tensor.cpp) ----
  bool defined() const { return static_cast<bool>(impl_); }
  int64_t dim() const { return impl_->dim(); }
  const Shape& sizes() const { return impl_->sizes(); }
  const Shape& strides() const { return impl_->strides(); }
  int64_t size(int64_t dim) const;     // negative dims count from the end
  int64_t stride(int64_t dim) const;
  int64_t numel() const { return impl_->numel(); }
  ScalarType dtype() const { return impl_->dtype(); }
  ScalarType scalar_type() const { return impl_->dtype(); }
  Device device() const { return impl_->device(); }
  bool is_contiguous() const { return impl_->is_contiguous(); }
  bool is_cuda() const { return device().is_cuda(); }
  bool is_meta() const { return device().is_meta(); }
  int64_t storage_offset() const { return impl_->storage_offset(); }
  int64_t nbytes() const { return impl_->nbytes(); }
  size_t itemsize() const { return impl_->itemsize(); }
  int64_t _version() const { return impl_->version(); }
  void* data_ptr() const { return impl_->data(); }
  template <class T>
  T* data_ptr() const {
    REMAT_CHECK(CppTypeToScalarType<T>::value == dtype(), "data_ptr: expected a ",
                remat::toString(CppTypeToScalarType<T>::value), " tensor, got ", remat::toString(dtype()));
    return static_cast<T*>(impl_->data());
  }
  TensorImpl* unsafeGetTensorImpl() const { return impl_.get(); }
  const intrusive_ptr<TensorImpl>& impl() const { return impl_; }
  bool is_same(const Tensor& other) const { return impl_ == other.impl_; }
  bool is_alias_of(const Tensor& other) const { return impl_->storage() == other.impl_->storage(); }
  uint32_t use_count() const { return impl_.use_count(); }
  void reset() { impl_.reset(); }
  // "CPUFloatType" style name used in error messages, as PyTorch's toString().
  std::string toString() const;

  // ---- values (ops/tensor_methods.cpp) ----
  std::vector<double> to_vector() const;  // row-major values, copied to host
  double item() const;
  Tensor to(Device device) const;
  Tensor to(ScalarType dtype) const;
  Tensor clone() const;
  Tensor detach() const;
  Tensor contiguous() const;

  // ---- autograd (engine/autograd/variable.cpp) ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true);
  Tensor grad() const;  // undefined Tensor if none
  void set_grad(const Tensor& grad) const;
  bool is_leaf() const;
  std::shared_ptr<autograd::Node> grad_fn() const;
  uint32_t output_nr() const;
  // A view autograd tracks (made by a view op), and the tensor all views of its storage are
  // views of (PyTorch's _base; undefined for a non-view).
  bool is_view() const;
  Tensor _base() const;
  void backward(const Tensor& gradient = {}, bool retain_graph = false,
                bool create_graph = false) const;
  // The hook sees the gradient flowing into this tensor and may return a replacement (or an
  // undefined Tensor to keep it).
  void register_hook(std::function<Tensor(const Tensor&)> hook) const;
  void retain_grad() const;

  // ---- in-place ops (bump the version counter; ops/tensor_methods.cpp) ----
  Tensor& add_(const Tensor& other);
  Tensor& add_(double other);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(double other);
  Tensor& zero_();
  Tensor& fill_(double value);
  Tensor& copy_(const Tensor& src);
  Tensor& relu_();

  // ---- op methods (ops/tensor_methods.cpp); each calls the free function of the same name ----
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor silu() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor abs() const;
  Tensor pow(double exponent) const;
  Tensor sum() const;
  Tensor sum(const Shape& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const Shape& dims, bool keepdim = false) const;
  Tensor amax(int64_t dim, bool keepdim = false) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor mm(const Tensor& other) const;
  Tensor matmul(const Tensor& other) const;
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  Tensor permute(const Shape& dims) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;
  Tensor expand(const Shape& shape) const;
  Tensor as_strided(const Shape& size, const Shape& stride, std::optional<int64_t> storage_offset = std::nullopt) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor view_as(const Tensor& other) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  Tensor masked_fill(const Tensor& mask, double value) const;

 private:
  intrusive_ptr<TensorImpl> impl_;
};

// Arithmetic operators (ops/tensor_methods.cpp).
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator-(const Tensor& a);

// Prints shape, dtype, device and (for small CPU tensors) values.
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::ostream& operator<<(std::ostream& os, const Shape& shape);

// A new tensor with fresh, uninitialised storage (no op is dispatched; the device's allocator
// is called directly, as at::empty's backend kernels do).
Tensor make_empty(Shape sizes, ScalarType dtype, Device device);
Tensor make_empty_strided(Shape sizes, Shape strides, ScalarType dtype, Device device);
// A tensor that aliases `base`'s storage with new geometry (what view ops build). Shares the
// storage and therefore the version counter.
Tensor make_alias(const Tensor& base, const Shape& sizes, const Shape& strides, int64_t storage_offset);
// The same, reading the storage as another dtype (view_as_real, view_as_complex): sizes, strides
// and storage_offset count elements of `dtype`.
Tensor make_alias(const Tensor& base, ScalarType dtype, const Shape& sizes, const Shape& strides,
                  int64_t storage_offset);

// Says what a tensor's bytes are, for the memory tracker (memory_context.h): the storage is
// re-labelled when `category` ranks before its current one. No-op for an undefined tensor.
void claim_memory(const Tensor& t, MemoryCategory category);

// Wraps a possibly-negative dim into [0, ndim); names the op in the error.
int64_t maybe_wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace remat
