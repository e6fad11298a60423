// A kernel launch on the emulated device: the grid's blocks spread over worker threads (the
// "multiprocessors": as many as the host has cores), under each schedule of
// REMAT_CUDA_EMU_SCHEDULE, with the results compared bitwise when there are several.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "kernels/cuda/emu/block.h"

namespace remat::cuda_emu {

// Runs every block of the call (on the calling stream worker and the pool), under every schedule.
// Returns cudaSuccess, or cudaErrorLaunchFailure with `message` naming the kernel and what failed.
cudaError_t run_grid(const KernelCall& call, std::string& message);

// The launch's checks, done when it is queued (as cudaLaunchKernel does): cudaSuccess or the
// error CUDA gives for the configuration.
cudaError_t check_launch(const void* kernel, dim3 grid, dim3 block, size_t dynamic_shared_bytes);

}  // namespace remat::cuda_emu
