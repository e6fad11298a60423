// Mirrors c10/cuda/CUDAStream.h: a stream of one device, the thread's current stream per
// device, and a pool of streams for side work.
//
// The default stream of every device is the legacy default stream (as PyTorch's); pool streams
// are created non-blocking, so work on them is ordered against other streams only through
// events (engine/cuda/cuda_event.h) or synchronisation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <ostream>

#include "engine/core/device.h"

namespace remat::cuda {

class CUDAStream {
 public:
  CUDAStream(int device_index, cudaStream_t stream) : device_index_(device_index), stream_(stream) {}

  int device_index() const { return device_index_; }
  Device device() const { return Device{kCUDA, device_index_}; }
  cudaStream_t stream() const { return stream_; }
  operator cudaStream_t() const { return stream_; }  // NOLINT: pass where a cudaStream_t goes

  bool operator==(const CUDAStream& o) const { return device_index_ == o.device_index_ && stream_ == o.stream_; }
  bool operator!=(const CUDAStream& o) const { return !(*this == o); }
  bool is_default() const { return stream_ == nullptr; }

  // True when all work queued on the stream has finished.
  bool query() const;
  void synchronize() const;

 private:
  int device_index_;
  cudaStream_t stream_;
};

std::ostream& operator<<(std::ostream& os, const CUDAStream& s);

// The default (legacy) stream of a device (-1: the current device).
CUDAStream getDefaultCUDAStream(int device = -1);
// This thread's current stream on a device (-1: the current device); the default stream
// until setCurrentCUDAStream changes it.
CUDAStream getCurrentCUDAStream(int device = -1);
// Makes s the current stream of its device for this thread (not the current device).
void setCurrentCUDAStream(CUDAStream s);
// A stream from the device's pool (created on first use, handed out round-robin).
CUDAStream getStreamFromPool(bool high_priority = false, int device = -1);

}  // namespace remat::cuda
