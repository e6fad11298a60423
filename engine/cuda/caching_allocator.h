// Mirrors c10/cuda/CUDACachingAllocator.h: remat's Allocator for kCUDA. Freed blocks are kept
// and handed out again instead of going back to cudaMalloc/cudaFree (which synchronise the
// device). The block logic (rounding, pools, splitting, merging, streams, empty_cache) is
// DeviceCachingAllocator in engine/core/device_caching_allocator.h, which a Meta dry run that
// imitates CUDA runs too; this file gives it cudaMalloc and CUDA events, and registers it.
// Statistics are exact: memory_allocated(Device{kCUDA, i}) is the sum of the byte sizes asked
// for by live tensors, memory_reserved the bytes of the segments held from cudaMalloc.
#pragma once

#include <cuda_runtime_api.h>

#include "engine/core/allocator.h"
#include "engine/core/device_caching_allocator.h"
#include "engine/cuda/cuda_stream.h"

namespace remat {
class Tensor;
}

namespace remat::cuda::CUDACachingAllocator {

// The kCUDA allocator (registered with set_allocator at static initialisation).
Allocator* get();
// Frees all unused cached segments of every device (torch.cuda.empty_cache()).
void empty_cache();
DeviceStats get_device_stats(int device);
// Records that the storage behind `data_ptr` (a pointer the allocator returned) is used by
// `stream` (Tensor.record_stream).
void record_stream(void* data_ptr, const CUDAStream& stream);
void record_stream(const Tensor& tensor, const CUDAStream& stream);

}  // namespace remat::cuda::CUDACachingAllocator

namespace remat::cuda {
// torch.cuda.memory_reserved / empty_cache, shorter spellings.
inline void empty_cache() { CUDACachingAllocator::empty_cache(); }
}  // namespace remat::cuda
