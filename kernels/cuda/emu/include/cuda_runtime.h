// <cuda_runtime.h> under --config=cuda_emu: the runtime API and the device side of CUDA C++,
// as nvcc's cuda_runtime.h gives both to a .cu file.
#pragma once

#include <cuda_runtime_api.h>

#include "kernels/cuda/emu/device.h"
