// Mirrors c10/cuda/CUDAFunctions.h: device count, current device, synchronisation.
#pragma once

#include <string>

#include "engine/core/device.h"

namespace remat::cuda {

// Number of visible CUDA devices; 0 when there is no driver or no device (never throws).
int device_count();
// Why device_count() is 0 (the CUDA error of cudaGetDeviceCount), or "" when devices exist.
const std::string& unavailable_reason();
bool is_available();

int current_device();
void set_device(int device);
// Waits for every stream of a device (-1: the current device).
void device_synchronize(int device = -1);
// Streaming multiprocessors of a device (cached): kernels size their grids with it.
int multiprocessor_count(int device);

// Throws remat::Error unless `device` names an existing CUDA device; names the op (or the
// caller) and, with no device at all, the reason.
void check_device(const Device& device, const char* who);

}  // namespace remat::cuda
