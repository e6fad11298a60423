// Mirrors c10/cuda/CUDAFunctions.cpp and ATen/cuda/detail/CUDAHooks.cpp (the real CUDA hooks,
// installed here at static initialisation so remat::cuda_is_available() sees the devices).
#include "engine/cuda/cuda_functions.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <mutex>

#include "engine/core/cuda_hooks.h"
#include "engine/cuda/cuda_exception.h"
#include "engine/cuda/host_offload.h"

namespace remat::cuda {

namespace {

struct DeviceCount {
  int count = 0;
  std::string reason;
};

const DeviceCount& probe() {
  static const DeviceCount* result = [] {
    auto* r = new DeviceCount();
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();  // no driver / no device: remember why, report 0 devices
      r->reason = detail::str(cudaGetErrorString(err), " (", cudaGetErrorName(err), ")");
      n = 0;
    } else if (n == 0) {
      r->reason = "no CUDA device found";
    }
    r->count = n;
    return r;
  }();
  return *result;
}

constexpr int kMaxDevices = 64;

}  // namespace

int device_count() { return probe().count; }
const std::string& unavailable_reason() { return probe().reason; }
bool is_available() { return device_count() > 0; }

int current_device() {
  int d = 0;
  REMAT_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void set_device(int device) { REMAT_CUDA_CHECK(cudaSetDevice(device)); }

void device_synchronize(int device) {
  if (device < 0) {
    REMAT_CUDA_CHECK(cudaDeviceSynchronize());
    return;
  }
  int prev = current_device();
  if (prev != device) set_device(device);
  cudaError_t err = cudaDeviceSynchronize();
  if (prev != device) set_device(prev);
  REMAT_CUDA_CHECK(err);
}

int multiprocessor_count(int device) {
  static std::array<std::atomic<int>, kMaxDevices> cache{};
  REMAT_CHECK(device >= 0 && device < kMaxDevices, "multiprocessor_count: bad device index ", device);
  int n = cache[device].load(std::memory_order_relaxed);
  if (n == 0) {
    REMAT_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    cache[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

void check_device(const Device& device, const char* who) {
  REMAT_CHECK(device.is_cuda(), who, ": expected a CUDA device, got ", device);
  const int n = device_count();
  REMAT_CHECK(n > 0, who, ": CUDA is not available on this machine (", unavailable_reason(), "); cannot use ", device);
  REMAT_CHECK(device.index >= 0 && device.index < n, who, ": CUDA error: invalid device ordinal: ", device, " (",
              n, " device", n == 1 ? "" : "s", " visible)");
}

namespace {

class CUDAHooks final : public CUDAHooksInterface {
 public:
  bool is_available() const override { return cuda::is_available(); }
  int64_t device_count() const override { return cuda::device_count(); }
  void synchronize(int device) const override {
    if (cuda::is_available()) device_synchronize(device);
  }
#ifdef REMAT_CUDA_EMU
  bool is_emulated() const override { return true; }
#endif
  Tensor copy_to_pinned_host(const Tensor& t, std::shared_ptr<void>* done) const override {
    return cuda::copy_to_pinned_host(t, done);
  }
  Tensor copy_from_pinned_host(const Tensor& t, const Device& d, std::shared_ptr<void>* done) const override {
    return cuda::copy_from_pinned_host(t, d, done);
  }
  void wait_transfer(const std::shared_ptr<void>& done) const override { cuda::wait_transfer(done); }
  void stream_wait_transfer(const std::shared_ptr<void>& done) const override { cuda::stream_wait_transfer(done); }
};

const bool hooks_installed = [] {
  set_cuda_hooks(new CUDAHooks());  // never destroyed: asked during static teardown too
  return true;
}();

}  // namespace

}  // namespace remat::cuda
