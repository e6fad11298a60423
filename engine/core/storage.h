// Mirrors c10/core/StorageImpl.h: one allocation, shared by a tensor and all its views.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "engine/core/allocator.h"
#include "engine/core/device.h"
#include "engine/core/intrusive_ptr.h"

namespace remat {

class StorageImpl : public intrusive_ptr_target {
 public:
  StorageImpl(size_t nbytes, Device device)
      : nbytes_(nbytes), device_(device), allocator_(get_allocator(device)),
        data_(allocator_->allocate(device, nbytes)) {}
  ~StorageImpl() override { allocator_->deallocate(device_, data_, nbytes_); }
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // The version counter (torch/csrc/autograd/variable.h, VariableVersion). PyTorch shares one
  // counter between a tensor and its views; remat keeps it on the storage they all share, which
  // is the same thing without one more allocation per tensor.
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  size_t nbytes_;
  Device device_;
  Allocator* allocator_;
  void* data_;
  std::atomic<uint32_t> version_{0};
};

}  // namespace remat
