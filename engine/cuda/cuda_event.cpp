// Mirrors ATen/cuda/CUDAEvent.h (record, block, query, synchronize, elapsed_time).
#include "engine/cuda/cuda_event.h"

#include <utility>

#include "engine/cuda/cuda_exception.h"
#include "engine/cuda/cuda_guard.h"

namespace remat::cuda {

CUDAEvent::~CUDAEvent() {
  if (event_ != nullptr) (void)cudaEventDestroy(event_);  // may run after the runtime shut down
}

CUDAEvent::CUDAEvent(CUDAEvent&& other) noexcept : enable_timing_(other.enable_timing_) { move_from(other); }

CUDAEvent& CUDAEvent::operator=(CUDAEvent&& other) noexcept {
  if (this != &other) {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
    enable_timing_ = other.enable_timing_;
    move_from(other);
  }
  return *this;
}

void CUDAEvent::move_from(CUDAEvent& other) {
  was_recorded_ = other.was_recorded_;
  device_index_ = other.device_index_;
  event_ = other.event_;
  other.event_ = nullptr;
  other.was_recorded_ = false;
  other.device_index_ = -1;
}

void CUDAEvent::record() { record(getCurrentCUDAStream()); }

void CUDAEvent::record(const CUDAStream& stream) {
  CUDAGuard guard(stream.device_index());
  if (event_ == nullptr) {
    REMAT_CUDA_CHECK(cudaEventCreateWithFlags(&event_, enable_timing_ ? cudaEventDefault : cudaEventDisableTiming));
    device_index_ = stream.device_index();
  }
  REMAT_CHECK(device_index_ == stream.device_index(), "CUDAEvent::record: event on cuda:", device_index_,
              " cannot be recorded on a stream of ", stream.device());
  REMAT_CUDA_CHECK(cudaEventRecord(event_, stream.stream()));
  was_recorded_ = true;
}

void CUDAEvent::block(const CUDAStream& stream) {
  if (!was_recorded_) return;
  CUDAGuard guard(stream.device_index());
  REMAT_CUDA_CHECK(cudaStreamWaitEvent(stream.stream(), event_, 0));
}

bool CUDAEvent::query() const {
  if (!was_recorded_) return true;
  cudaError_t err = cudaEventQuery(event_);
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  REMAT_CUDA_CHECK(err);
  return true;
}

void CUDAEvent::synchronize() const {
  if (was_recorded_) REMAT_CUDA_CHECK(cudaEventSynchronize(event_));
}

float CUDAEvent::elapsed_time(const CUDAEvent& end) const {
  REMAT_CHECK(enable_timing_ && end.enable_timing_, "CUDAEvent::elapsed_time: both events must be created with "
              "enable_timing=true");
  REMAT_CHECK(was_recorded_ && end.was_recorded_, "CUDAEvent::elapsed_time: both events must be recorded before "
              "calculating elapsed time");
  float ms = 0;
  REMAT_CUDA_CHECK(cudaEventElapsedTime(&ms, event_, end.event_));
  return ms;
}

}  // namespace remat::cuda
