// Launch-sizing helpers of kernels/cuda/common.cuh (host code).
#include <cuda_runtime_api.h>

#include <array>
#include <atomic>

#include "engine/cuda/cuda_exception.h"

namespace remat::kernels::cuda {

int current_sm_count() {
  static std::array<std::atomic<int>, 64> cache{};
  int device = 0;
  REMAT_CUDA_CHECK(cudaGetDevice(&device));
  REMAT_CHECK(device >= 0 && device < 64, "current_sm_count: device index ", device, " out of range");
  int n = cache[device].load(std::memory_order_relaxed);
  if (n == 0) {
    REMAT_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
    cache[device].store(n, std::memory_order_relaxed);
  }
  return n;
}

}  // namespace remat::kernels::cuda
