// Mirrors c10/cuda/CUDAStream.cpp: thread-local current streams and per-device stream pools.
#include "engine/cuda/cuda_stream.h"

#include <array>
#include <atomic>
#include <mutex>
#include <vector>

#include "engine/cuda/cuda_exception.h"
#include "engine/cuda/cuda_functions.h"

namespace remat::cuda {

namespace {

constexpr int kStreamsPerPool = 32;

struct StreamPool {
  std::once_flag created;
  std::array<cudaStream_t, kStreamsPerPool> low{};
  std::array<cudaStream_t, kStreamsPerPool> high{};
  std::atomic<uint32_t> next_low{0}, next_high{0};
};

StreamPool& pool(int device) {
  static std::vector<StreamPool>* pools = new std::vector<StreamPool>(static_cast<size_t>(device_count()));
  REMAT_CHECK(device >= 0 && device < static_cast<int>(pools->size()), "getStreamFromPool: bad device index ",
              device);
  return (*pools)[static_cast<size_t>(device)];
}

int resolve(int device) {
  if (device >= 0) {
    check_device(Device{kCUDA, device}, "CUDAStream");
    return device;
  }
  check_device(Device{kCUDA, 0}, "CUDAStream");
  return current_device();
}

// This thread's current stream per device (nullptr: the default stream).
std::vector<cudaStream_t>& current_streams() {
  thread_local std::vector<cudaStream_t> streams;
  if (streams.empty()) streams.assign(static_cast<size_t>(device_count()), nullptr);
  return streams;
}

}  // namespace

bool CUDAStream::query() const {
  cudaError_t err = cudaStreamQuery(stream_);
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  REMAT_CUDA_CHECK(err);
  return true;
}

void CUDAStream::synchronize() const { REMAT_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

std::ostream& operator<<(std::ostream& os, const CUDAStream& s) {
  return os << "stream " << static_cast<const void*>(s.stream()) << " on " << s.device();
}

CUDAStream getDefaultCUDAStream(int device) { return CUDAStream(resolve(device), nullptr); }

CUDAStream getCurrentCUDAStream(int device) {
  int d = resolve(device);
  return CUDAStream(d, current_streams()[static_cast<size_t>(d)]);
}

void setCurrentCUDAStream(CUDAStream s) {
  check_device(s.device(), "setCurrentCUDAStream");
  current_streams()[static_cast<size_t>(s.device_index())] = s.stream();
}

CUDAStream getStreamFromPool(bool high_priority, int device) {
  int d = resolve(device);
  StreamPool& p = pool(d);
  std::call_once(p.created, [&] {
    int prev = current_device();
    set_device(d);
    int least = 0, greatest = 0;  // "greatest" priority is the numerically lowest value
    REMAT_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    for (int i = 0; i < kStreamsPerPool; ++i) {
      REMAT_CUDA_CHECK(cudaStreamCreateWithPriority(&p.low[i], cudaStreamNonBlocking, least));
      REMAT_CUDA_CHECK(cudaStreamCreateWithPriority(&p.high[i], cudaStreamNonBlocking, greatest));
    }
    set_device(prev);
  });
  auto& counter = high_priority ? p.next_high : p.next_low;
  uint32_t i = counter.fetch_add(1, std::memory_order_relaxed) % kStreamsPerPool;
  return CUDAStream(d, high_priority ? p.high[i] : p.low[i]);
}

}  // namespace remat::cuda
