// Mirrors ATen/cuda/CachingHostAllocator.h (pinned host memory, cudaMallocHost) and the
// side-stream copies that torch.autograd.graph.save_on_cpu(pin_memory=True) and FSDP's offload
// make: what CUDAHooksInterface's copy_to_pinned_host / copy_from_pinned_host / wait_transfer /
// stream_wait_transfer do on kCUDA (engine/core/cuda_hooks.h says what each promises).
//
// One offload stream per device (taken once from the stream pool) carries every transfer, in the
// order they were asked for. Pinned buffers are not cached (one cudaMallocHost per tensor, freed
// with cudaFreeHost), so their bytes come and go exactly with the tensors that hold them.
#pragma once

#include <memory>

#include "engine/core/tensor.h"
#include "engine/cuda/cuda_stream.h"

namespace remat::cuda {

// The stream every offload transfer of `device` runs on.
CUDAStream offload_stream(int device);

// The Allocator of pinned host storages (Device{kCPU}): counts in the CPU allocator's statistics
// (memory_allocated(Device{kCPU})) and in offloaded_host_stats(Device{kCUDA}). allocate throws
// remat::Error naming the bytes when cudaMallocHost fails.
Allocator* pinned_host_allocator();

Tensor copy_to_pinned_host(const Tensor& device_tensor, std::shared_ptr<void>* done);
Tensor copy_from_pinned_host(const Tensor& host_tensor, const Device& device, std::shared_ptr<void>* done);
void wait_transfer(const std::shared_ptr<void>& done);
void stream_wait_transfer(const std::shared_ptr<void>& done);

}  // namespace remat::cuda
