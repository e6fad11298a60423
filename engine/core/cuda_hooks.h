// Mirrors ATen/detail/CUDAHooksInterface.h: what the core asks of CUDA without linking it.
// The default answers "no CUDA"; engine/cuda installs the real hooks at static initialisation,
// so a build without --config=cuda links and cuda_is_available() is false.
#pragma once

#include <cstdint>

namespace remat {

class CUDAHooksInterface {
 public:
  virtual ~CUDAHooksInterface() = default;
  virtual bool is_available() const { return false; }
  virtual int64_t device_count() const { return 0; }
  // Waits for all work on a device (-1: the current device). No-op without CUDA.
  virtual void synchronize(int /*device*/) const {}
  // True when the CUDA devices are remat's emulated device (--config=cuda_emu), not a GPU.
  virtual bool is_emulated() const { return false; }
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
