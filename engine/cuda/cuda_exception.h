// Mirrors c10/cuda/CUDAException.h (C10_CUDA_CHECK, C10_CUDA_KERNEL_LAUNCH_CHECK): every CUDA
// runtime call is checked, and a failure throws remat::Error naming the call, the error's
// name and its description, e.g.
//   "CUDA error: out of memory (cudaErrorMemoryAllocation) in cudaMalloc(&ptr, n) at f.cpp:12".
#pragma once

#include <cuda_runtime_api.h>

#include "engine/core/error.h"

namespace remat::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw Error(detail::str("CUDA error: ", cudaGetErrorString(err), " (", cudaGetErrorName(err), ") in ", call,
                          " at ", file, ":", line));
}

}  // namespace remat::cuda

// Checks a cudaError_t; on failure clears the (non-sticky) error state and throws.
#define REMAT_CUDA_CHECK(EXPR)                                                 \
  do {                                                                         \
    const cudaError_t remat_cuda_err_ = (EXPR);                                \
    if (__builtin_expect(remat_cuda_err_ != cudaSuccess, 0)) {                 \
      (void)cudaGetLastError();                                                \
      ::remat::cuda::throw_cuda_error(remat_cuda_err_, #EXPR, __FILE__, __LINE__); \
    }                                                                          \
  } while (0)

// After a <<<...>>> launch: a bad configuration or a missing kernel image shows up here.
#define REMAT_CUDA_KERNEL_LAUNCH_CHECK() REMAT_CUDA_CHECK(cudaGetLastError())
