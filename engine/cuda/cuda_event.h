// Mirrors ATen/cuda/CUDAEvent.h: an event recorded on a stream, to order work across streams
// (block), to poll or wait for completion, and to time work (elapsed_time).
#pragma once

#include <cuda_runtime_api.h>

#include "engine/cuda/cuda_stream.h"

namespace remat::cuda {

class CUDAEvent {
 public:
  // The CUDA event is created lazily, on the device of the first stream it is recorded on.
  explicit CUDAEvent(bool enable_timing = false) : enable_timing_(enable_timing) {}
  ~CUDAEvent();
  CUDAEvent(const CUDAEvent&) = delete;
  CUDAEvent& operator=(const CUDAEvent&) = delete;
  CUDAEvent(CUDAEvent&& other) noexcept;
  CUDAEvent& operator=(CUDAEvent&& other) noexcept;

  bool is_created() const { return event_ != nullptr; }
  int device_index() const { return device_index_; }
  cudaEvent_t event() const { return event_; }

  // Records the work queued on stream so far (the current stream of the current device by
  // default).
  void record();
  void record(const CUDAStream& stream);
  // Makes future work on stream wait for this event (no host wait). No-op if never recorded.
  void block(const CUDAStream& stream);
  // True when the recorded work has completed (or nothing was recorded).
  bool query() const;
  void synchronize() const;
  // Milliseconds between this event and `end` (both recorded, with enable_timing).
  float elapsed_time(const CUDAEvent& end) const;

 private:
  void move_from(CUDAEvent& other);
  bool enable_timing_;
  bool was_recorded_ = false;
  int device_index_ = -1;
  cudaEvent_t event_ = nullptr;
};

}  // namespace remat::cuda
