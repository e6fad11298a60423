// Mirrors c10/cuda/CUDAGuard.h: RAII guards that set the current device (CUDAGuard) or the
// current stream of a device (CUDAStreamGuard) and restore the previous one on exit.
#pragma once

#include "engine/core/device.h"
#include "engine/cuda/cuda_functions.h"
#include "engine/cuda/cuda_stream.h"

namespace remat::cuda {

class CUDAGuard {
 public:
  explicit CUDAGuard(int device) : previous_(current_device()) {
    if (device != previous_) set_device(device);
  }
  explicit CUDAGuard(const Device& device) : CUDAGuard(device.index) {}
  CUDAGuard(const CUDAGuard&) = delete;
  CUDAGuard& operator=(const CUDAGuard&) = delete;
  ~CUDAGuard() {
    int now = 0;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) (void)cudaSetDevice(previous_);
  }
  int original_device() const { return previous_; }

 private:
  int previous_;
};

// Sets both the current device and that device's current stream; restores both.
class CUDAStreamGuard {
 public:
  explicit CUDAStreamGuard(CUDAStream stream)
      : device_guard_(stream.device_index()), previous_(getCurrentCUDAStream(stream.device_index())) {
    setCurrentCUDAStream(stream);
  }
  CUDAStreamGuard(const CUDAStreamGuard&) = delete;
  CUDAStreamGuard& operator=(const CUDAStreamGuard&) = delete;
  ~CUDAStreamGuard() { setCurrentCUDAStream(previous_); }
  CUDAStream original_stream() const { return previous_; }

 private:
  CUDAGuard device_guard_;
  CUDAStream previous_;
};

}  // namespace remat::cuda
