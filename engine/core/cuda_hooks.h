// Mirrors ATen/detail/CUDAHooksInterface.h: what the core asks of CUDA without linking it.
// The default answers "no CUDA"; engine/cuda installs the real hooks at static initialisation,
// so a build without --config=cuda links and cuda_is_available() is false.
#pragma once

#include <cstdint>
#include <memory>

namespace remat {

class Tensor;
struct Device;

class CUDAHooksInterface {
 public:
  virtual ~CUDAHooksInterface() = default;
  virtual bool is_available() const { return false; }
  virtual int64_t device_count() const { return 0; }
  // Waits for all work on a device (-1: the current device). No-op without CUDA.
  virtual void synchronize(int /*device*/) const {}
  // True when the CUDA devices are remat's emulated device (--config=cuda_emu), not a GPU.
  virtual bool is_emulated() const { return false; }

  // Transfers between a CUDA device and pinned host memory, for offloading saved tensors
  // (checkpoint/offload.h; c10's getPinnedMemoryAllocator plus the side-stream copies of
  // save_on_cpu and FSDP). Each runs on the device's offload stream (one side stream per device,
  // from the stream pool), ordered after the work queued on the current stream so far (an event
  // the side stream waits on), and returns a token for its completion (an event recorded after
  // the copy). Without CUDA they throw remat::Error.
  //
  // A contiguous CUDA tensor's bytes into a new pinned host tensor (Device{kCPU}, counted in
  // memory_allocated(Device{kCPU}) under the thread's current memory category, and in
  // offloaded_memory_allocated(Device{kCUDA})). The caching allocator's record_stream marks the
  // source as used by the offload stream, so its block is not reused before the copy has read it
  // even if it is freed at once. Throws remat::Error naming the bytes when cudaMallocHost fails.
  virtual Tensor copy_to_pinned_host(const Tensor& device_tensor, std::shared_ptr<void>* done) const;
  // A pinned host tensor's bytes into a new tensor on `device`, allocated now on the current
  // stream (so it counts there, as the same allocation made by an op would). Before using it on
  // the current stream, wait for `done` (wait_transfer or stream_wait_transfer).
  virtual Tensor copy_from_pinned_host(const Tensor& host_tensor, const Device& device,
                                       std::shared_ptr<void>* done) const;
  // The host waits until the transfer is complete.
  virtual void wait_transfer(const std::shared_ptr<void>& done) const;
  // The current stream of the transfer's device waits for it (no host wait).
  virtual void stream_wait_transfer(const std::shared_ptr<void>& done) const;
};

// The installed hooks (the "not available" default until engine/cuda replaces them).
const CUDAHooksInterface& cuda_hooks();
// Installs hooks (engine/cuda does this once at static initialisation). Returns the previous.
const CUDAHooksInterface* set_cuda_hooks(const CUDAHooksInterface* hooks);

// torch.cuda.is_available(): built with CUDA, a driver present and at least one device.
bool cuda_is_available();
// torch.cuda.device_count(): 0 without CUDA.
int64_t cuda_device_count();
// torch.cuda.synchronize(device): waits for the device's queued work (-1: current device).
void cuda_synchronize(int device = -1);

namespace cuda {
// True under --config=cuda_emu: kCUDA runs on the emulated device (correct results, CPU speed).
// Benchmarks and reports say "emulated" beside every device name and every time then.
bool is_emulated();
}  // namespace cuda

}  // namespace remat
