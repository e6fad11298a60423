// The one way remat's .cu files launch a kernel, so that the same source runs under nvcc and on
// the emulated device (--config=cuda_emu):
//
//   REMAT_CUDA_LAUNCH(grid, block, shared_bytes, stream, kernel<T, 4>)(args...);
//
// is `kernel<T, 4><<<grid, block, shared_bytes, stream>>>(args...)` under nvcc, and a launch
// through remat::cuda_emu::Launcher (kernels/cuda/emu/launch.h) under emulation. The kernel
// comes last so that template arguments with commas need no parentheses.
#pragma once

#if defined(REMAT_CUDA_EMU)
#include "kernels/cuda/emu/launch.h"
#define REMAT_CUDA_LAUNCH(GRID, BLOCK, SHARED_BYTES, STREAM, ...) \
  ::remat::cuda_emu::Launcher<__VA_ARGS__>{&__VA_ARGS__, dim3(GRID), dim3(BLOCK), static_cast<size_t>(SHARED_BYTES), \
                                           (STREAM)}
#else
#define REMAT_CUDA_LAUNCH(GRID, BLOCK, SHARED_BYTES, STREAM, ...) __VA_ARGS__<<<(GRID), (BLOCK), (SHARED_BYTES), (STREAM)>>>
#endif
