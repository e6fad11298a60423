// The emulated device's memory: device allocations and pinned host allocations in host memory,
// each one a separate heap block (so ASan puts redzones around it and quarantines it when
// freed), counted apart from the CPU allocator. Mirrors what the driver's cuMemAlloc /
// cuMemHostAlloc and its pointer table do; remat's caching allocator runs over it unchanged.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace remat::cuda_emu {

enum class MemoryKind { Device, PinnedHost };

struct Allocation {
  char* base = nullptr;
  size_t size = 0;
  int device = 0;
  MemoryKind kind = MemoryKind::Device;
};

cudaError_t allocate(void** ptr, size_t size, MemoryKind kind, int device);
cudaError_t release(void* ptr, MemoryKind kind);

// The allocation holding [ptr, ptr + size), if any (size 0: holding ptr).
bool find_allocation(const void* ptr, size_t size, Allocation* out);
// The allocation holding ptr, whatever the size asked for (to tell "device memory, but the range
// runs past its end" from "host memory").
bool find_allocation_start(const void* ptr, Allocation* out);

// Bytes of device memory in use on a device, and the device's capacity
// (REMAT_CUDA_EMU_MEMORY bytes, default an H200's 141 GB).
size_t device_bytes_in_use(int device);
size_t device_capacity();
// Pinned host bytes in use (cudaMallocHost), and the cap on them: REMAT_CUDA_EMU_HOST_MEMORY bytes
// (read at every cudaMallocHost, so a test can set it around one case), unlimited when unset.
// An allocation past the cap fails with cudaErrorMemoryAllocation, as cudaMallocHost does when the
// host cannot pin more (its page-locked memory limit).
size_t pinned_host_bytes_in_use();
size_t pinned_host_capacity();

}  // namespace remat::cuda_emu
