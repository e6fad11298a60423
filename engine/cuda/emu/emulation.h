// The emulated device's internals that its device side (kernels/cuda/emu: kernel launches) and
// its cuBLAS need: the device's limits, the stream queues work runs on, device memory
// snapshots (for comparing thread schedules), and asynchronous failures. No CUDA counterpart:
// this is what a driver does. remat code above engine/ and kernels/ never includes it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace remat::cuda_emu {

// An H200's limits (NVIDIA's H200 and Hopper tuning guide figures).
struct DeviceLimits {
  static constexpr int kMultiProcessors = 132;
  static constexpr int kWarpSize = 32;
  static constexpr int kMaxThreadsPerBlock = 1024;
  static constexpr int kMaxBlockDim[3] = {1024, 1024, 64};
  static constexpr int kMaxGridDim[3] = {2147483647, 65535, 65535};
  static constexpr size_t kSharedMemoryPerBlock = 48 * 1024;         // static + default dynamic
  static constexpr size_t kSharedMemoryPerBlockOptin = 227 * 1024;   // cudaFuncSetAttribute's cap
  static constexpr size_t kGlobalMemory = 141ull * 1000 * 1000 * 1000;  // 141 GB of HBM3e
  static constexpr int kComputeMajor = 9, kComputeMinor = 0;
};

// The device the calling host thread has selected (cudaSetDevice).
int current_device();

// Queues `work` on a stream (0 and cudaStreamLegacy: the current device's legacy default
// stream), in order after everything queued there before, with the legacy default stream's
// implicit synchronisation. Returns cudaErrorInvalidResourceHandle for an unknown stream.
// `work` runs on the stream's worker thread; what it returns (cudaSuccess or a failure, with
// `failure_message`) is reported by the next synchronising call, as CUDA reports a kernel fault.
using Work = std::function<cudaError_t(std::string& failure_message)>;
cudaError_t enqueue(cudaStream_t stream, Work work);

// The calling thread's last error (what cudaGetLastError returns and clears).
void set_last_error(cudaError_t error);

// Dynamic shared memory a kernel may request (cudaFuncSetAttribute's
// MaxDynamicSharedMemorySize; DeviceLimits::kSharedMemoryPerBlock until raised).
size_t max_dynamic_shared_memory(const void* kernel);

// The bytes of the device allocations a kernel can reach, to run one launch under several thread
// schedules from the same state and compare what each left behind. What it can reach: every
// allocation that an 8-byte word of its arguments points into (a conservative scan, as a
// garbage collector's: padding that happens to look like a pointer only adds an allocation).
struct MemorySnapshot {
  struct Region {
    char* base;
    std::vector<char> bytes;
  };
  std::vector<Region> regions;
};
MemorySnapshot snapshot_device_memory(const void* kernel_args, size_t bytes);
void restore_device_memory(const MemorySnapshot& snapshot);
// "" if the device memory equals the snapshot, else where it first differs.
std::string first_difference(const MemorySnapshot& snapshot);

// True when each launch is run under several schedules (REMAT_CUDA_EMU_SCHEDULE lists more than
// one): kernels then run one at a time, so a snapshot sees no other kernel writing.
bool compares_schedules();
// Held by a kernel launch for the whole of its schedule comparison (snapshot, runs, restores) and,
// while schedules are compared, by every copy and memset as it touches device memory: a
// snapshot holds whole allocations (a caching allocator's segment holds many tensors), so a copy
// on another stream into another tensor of the same segment must neither show as a difference
// nor be undone by a restore.
std::mutex& schedule_comparison_mutex();

}  // namespace remat::cuda_emu
