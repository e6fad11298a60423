// Mirrors c10/cuda/CUDACachingAllocator.cpp's NativeCachingAllocator: DeviceCachingAllocator
// (engine/core/device_caching_allocator.cpp) over cudaMalloc and CUDA events, per device, and
// its registration as the kCUDA allocator.
#include "engine/cuda/caching_allocator.h"

#include <array>
#include <vector>

#include "engine/core/tensor.h"
#include "engine/cuda/cuda_exception.h"
#include "engine/cuda/cuda_functions.h"
#include "engine/cuda/cuda_guard.h"

namespace remat::cuda::CUDACachingAllocator {

// ---------------------------------------------------------------------------------------------
// The CUDA backend and the kCUDA Allocator
// ---------------------------------------------------------------------------------------------

namespace {

class CUDABackend final : public DeviceBackend {
 public:
  explicit CUDABackend(int device) : device_(device) {}
  void* raw_alloc(size_t nbytes) override {
    CUDAGuard guard(device_);
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, nbytes);
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      return nullptr;
    }
    REMAT_CUDA_CHECK(err);
    return p;
  }
  void raw_free(void* ptr) override {
    CUDAGuard guard(device_);
    REMAT_CUDA_CHECK(cudaFree(ptr));
  }
  void* create_event() override {
    CUDAGuard guard(device_);
    cudaEvent_t e = nullptr;
    REMAT_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }
  void destroy_event(void* event) override { REMAT_CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(event))); }
  void record_event(void* event, cudaStream_t stream) override {
    CUDAGuard guard(device_);
    REMAT_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), stream));
  }
  bool query_event(void* event) override {
    cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    REMAT_CUDA_CHECK(err);
    return true;
  }
  void synchronize_event(void* event) override {
    REMAT_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
  }
  bool query_stream(StreamHandle stream) override { return CUDAStream(device_, stream).query(); }

 private:
  int device_;
};

constexpr int kMaxDevices = 64;

// Which CUDA device a pointer lives on (for the host copies, which get only pointers).
int device_of(const void* ptr) {
  cudaPointerAttributes attr{};
  REMAT_CUDA_CHECK(cudaPointerGetAttributes(&attr, ptr));
  REMAT_CHECK(attr.type == cudaMemoryTypeDevice, "CUDA allocator copy: pointer ", ptr, " is not device memory");
  return attr.device;
}

class CUDAAllocator final : public Allocator {
 public:
  void* allocate(Device device, size_t nbytes) override {
    if (nbytes == 0) return nullptr;
    DeviceCachingAllocator& dev = device_allocator(device);
    CUDAGuard guard(device.index);
    void* p = dev.malloc(nbytes, getCurrentCUDAStream(device.index).stream());
    notify_allocation(device, static_cast<int64_t>(nbytes));
    return p;
  }
  void deallocate(Device device, void* ptr, size_t nbytes) override {
    if (ptr == nullptr) return;
    device_allocator(device).free(ptr);
    notify_allocation(device, -static_cast<int64_t>(nbytes));
  }
  int64_t counted_bytes(Device, size_t nbytes) const override {
    return nbytes == 0 ? 0 : static_cast<int64_t>(round_size(nbytes));
  }
  AllocatorStats& stats(Device device) override {
    REMAT_CHECK(device.index >= 0 && device.index < kMaxDevices, "CUDA allocator: bad device index ", device.index);
    return stats_[static_cast<size_t>(device.index)];
  }
  void empty_cache(Device device) override { device_allocator(device).empty_cache(); }
  // Host <-> device copies run on the current stream of the device and wait for it: the
  // caller reads (or frees) the host buffer right after.
  void copy_from_host(void* dst, const void* src, size_t n) override {
    if (n == 0) return;
    int d = device_of(dst);
    CUDAGuard guard(d);
    cudaStream_t s = getCurrentCUDAStream(d).stream();
    REMAT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s));
    REMAT_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  void copy_to_host(void* dst, const void* src, size_t n) override {
    if (n == 0) return;
    int d = device_of(src);
    CUDAGuard guard(d);
    cudaStream_t s = getCurrentCUDAStream(d).stream();
    REMAT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s));
    REMAT_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  // Device to device: stream-ordered on the destination's current stream.
  void copy_within(void* dst, const void* src, size_t n) override {
    if (n == 0) return;
    int d = device_of(dst);
    CUDAGuard guard(d);
    REMAT_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, getCurrentCUDAStream(d).stream()));
  }

  DeviceCachingAllocator& device_allocator(Device device) {
    check_device(device, "CUDA allocator");
    std::lock_guard<std::mutex> g(mutex_);
    auto& slot = devices_[static_cast<size_t>(device.index)];
    if (!slot) {
      slot = std::make_unique<DeviceCachingAllocator>(device.index, std::make_unique<CUDABackend>(device.index),
                                                      &stats_[static_cast<size_t>(device.index)]);
    }
    return *slot;
  }
  DeviceCachingAllocator* existing(int device) {
    std::lock_guard<std::mutex> g(mutex_);
    return devices_[static_cast<size_t>(device)].get();
  }

 private:
  std::mutex mutex_;
  std::array<std::unique_ptr<DeviceCachingAllocator>, kMaxDevices> devices_;
  std::array<AllocatorStats, kMaxDevices> stats_;
};

CUDAAllocator& instance() {
  static CUDAAllocator* a = new CUDAAllocator();  // never destroyed: storages may outlive statics
  return *a;
}

const bool registered = [] {
  set_allocator(kCUDA, &instance());
  return true;
}();

}  // namespace

Allocator* get() { return &instance(); }

void empty_cache() {
  for (int d = 0; d < device_count() && d < kMaxDevices; ++d) {
    if (DeviceCachingAllocator* a = instance().existing(d)) a->empty_cache();
  }
}

DeviceStats get_device_stats(int device) {
  REMAT_CHECK(device >= 0 && device < kMaxDevices, "get_device_stats: bad device index ", device);
  if (DeviceCachingAllocator* a = instance().existing(device)) return a->stats();
  DeviceStats s;
  AllocatorStats& st = instance().stats(Device{kCUDA, device});
  s.allocated_bytes = st.allocated.load();
  s.peak_allocated_bytes = st.peak.load();
  s.reserved_bytes = st.reserved.load();
  s.peak_reserved_bytes = st.peak_reserved.load();
  s.segments = st.segments.load();
  return s;
}

void record_stream(void* data_ptr, const CUDAStream& stream) {
  instance().device_allocator(stream.device()).record_stream(data_ptr, stream.stream());
}

void record_stream(const Tensor& tensor, const CUDAStream& stream) {
  REMAT_CHECK(tensor.defined() && tensor.is_cuda(), "record_stream: expected a CUDA tensor, got ",
              tensor.defined() ? tensor.device().str() : std::string("an undefined tensor"));
  REMAT_CHECK(tensor.device() == stream.device(), "record_stream: tensor on ", tensor.device(),
              " but stream on ", stream.device());
  void* base = tensor.impl()->storage()->data();
  if (base != nullptr) record_stream(base, stream);
}

}  // namespace remat::cuda::CUDACachingAllocator
