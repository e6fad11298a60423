// Mirrors c10/util/intrusive_ptr.h: a refcount stored inside the object (one allocation, 8-byte handle).
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace remat {

class intrusive_ptr_target {
 public:
  intrusive_ptr_target() = default;
  intrusive_ptr_target(const intrusive_ptr_target&) : refcount_(0) {}
  intrusive_ptr_target& operator=(const intrusive_ptr_target&) { return *this; }
  virtual ~intrusive_ptr_target() = default;
  uint32_t use_count() const { return refcount_.load(std::memory_order_relaxed); }

 private:
  template <class T> friend class intrusive_ptr;
  mutable std::atomic<uint32_t> refcount_{0};
};

template <class T>
class intrusive_ptr {
 public:
  intrusive_ptr() noexcept = default;
  intrusive_ptr(std::nullptr_t) noexcept {}  // NOLINT
  // Takes a fresh object (refcount 0) or adds a reference to a shared one.
  explicit intrusive_ptr(T* p) noexcept : p_(p) { retain(); }
  intrusive_ptr(const intrusive_ptr& o) noexcept : p_(o.p_) { retain(); }
  intrusive_ptr(intrusive_ptr&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  template <class U>
  intrusive_ptr(intrusive_ptr<U>&& o) noexcept : p_(o.release()) {}  // NOLINT: upcast
  ~intrusive_ptr() {
    if (p_) drop();  // inline: destroying an empty (moved-from, released) pointer costs no call
  }

  intrusive_ptr& operator=(const intrusive_ptr& o) noexcept {
    intrusive_ptr(o).swap(*this);
    return *this;
  }
  intrusive_ptr& operator=(intrusive_ptr&& o) noexcept {
    intrusive_ptr(std::move(o)).swap(*this);
    return *this;
  }

  void reset() noexcept {
    if (p_) {
      drop();
      p_ = nullptr;
    }
  }
  // Adopts p's existing reference, adding none (c10's reclaim; release() is its inverse).
  static intrusive_ptr reclaim(T* p) noexcept {
    intrusive_ptr r;
    r.p_ = p;
    return r;
  }
  T* release() noexcept {
    T* p = p_;
    p_ = nullptr;
    return p;
  }
  void swap(intrusive_ptr& o) noexcept { std::swap(p_, o.p_); }

  T* get() const noexcept { return p_; }
  T* operator->() const noexcept { return p_; }
  T& operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  bool operator==(const intrusive_ptr& o) const noexcept { return p_ == o.p_; }
  bool operator!=(const intrusive_ptr& o) const noexcept { return p_ != o.p_; }
  uint32_t use_count() const noexcept { return p_ ? p_->use_count() : 0; }

 private:
  void drop() noexcept {
    if (p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
  }

  void retain() noexcept {
    if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed);
  }
  T* p_ = nullptr;
};

template <class T, class... Args>
intrusive_ptr<T> make_intrusive(Args&&... args) {
  return intrusive_ptr<T>(new T(std::forward<Args>(args)...));
}

}  // namespace remat
