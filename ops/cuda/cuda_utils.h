// The CUDA side of ops/cpu_utils.h: raw conversions, copies and scratch memory for the CUDA
// kernels of ops. Nothing here dispatches (a kernel's own copies are not op calls), and every
// launch goes to the current stream of the tensor's device.
#pragma once

#include <cuda_runtime_api.h>

#include <initializer_list>

#include "engine/core/tensor.h"
#include "engine/cuda/cuda_guard.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/loop.h"
#include "ops/op_utils.h"

namespace remat::ops {

// The current stream of a CUDA device (this thread's).
cudaStream_t cuda_stream(const Device& device);

// make_loop (ops/op_utils.h) as a kernels::cuda::StridedLoop: out first, then inputs broadcast
// to out's sizes.
kernels::cuda::StridedLoop cuda_loop(const Tensor& out, std::initializer_list<const Tensor*> inputs);

// out[...] = in[...] with in broadcast to out's shape and converted to out's dtype (same device).
void copy_into_cuda(const Tensor& out, const Tensor& in);
// t, or a copy of t with dtype (same device).
Tensor cast_cuda(const Tensor& t, ScalarType dtype);
// t, or a contiguous copy of it.
Tensor contiguous_cuda(const Tensor& t);
void fill_cuda(const Tensor& t, double value);

// Scratch memory of at least nbytes on device (from the caching allocator, freed with the
// returned tensor; 512-byte aligned).
Tensor cuda_workspace(size_t nbytes, const Device& device);

// Where a kernel reports an out-of-range index (kernels::cuda::IndexError), zeroed on
// creation; throw_if_set() waits for the stream and throws remat::Error with the message and
// the offending value.
class CUDAIndexError {
 public:
  explicit CUDAIndexError(const Device& device);
  kernels::cuda::IndexError* get() const;
  // Throws "<what> (got index <value>)" if a kernel set the flag.
  void throw_if_set(const std::string& what) const;

 private:
  Device device_;
  Tensor flag_;
};

}  // namespace remat::ops
