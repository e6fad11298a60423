// The CUDA side of ops/cpu_utils.h: raw conversions, copies and scratch memory for the CUDA
// kernels of ops. Nothing here dispatches (a kernel's own copies are not op calls), and every
// launch goes to the current stream of the tensor's device.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <initializer_list>
#include <string>

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
// The CUDA backend's copies, for kernels whose temporaries are a template over a backend's copies
// (cuda_temporaries::reduce_input, ...): the Meta kernel runs the same template with MetaCopies
// (ops/meta_copies.h).
struct CUDACopies {
  static Tensor cast(const Tensor& t, ScalarType dtype) { return cast_cuda(t, dtype); }
  static Tensor contiguous(const Tensor& t) { return contiguous_cuda(t); }
  static Tensor workspace(size_t nbytes, const Device& device) { return cuda_workspace(nbytes, device); }
};

// Where a kernel reports out-of-range indices (kernels::cuda::IndexError: the smallest offending
// position), reset on creation. throw_if_set() waits for the stream, reads the position and the
// index there, and throws remat::Error with message(index, position).
namespace structured {
// How the CUDA backend allocates an op's output and runs a kernel: ops/structured.h's CPUBackend
// under a guard of the tensor's device (the current stream is that device's).
struct CUDABackend {
  static Tensor empty(const TensorMeta& m) {
    cuda::CUDAGuard guard(m.device);
    return empty_from(m);
  }
  template <class F>
  static void run(const Tensor& out, const F& kernel) {
    cuda::CUDAGuard guard(out.device());
    kernel();
  }
};
}  // namespace structured

class CUDAIndexError {
 public:
  explicit CUDAIndexError(const Device& device);
  // flag: the flag a kernel's temporaries made (cuda_temporaries::index_error_flag), reset here.
  explicit CUDAIndexError(Tensor flag);
  kernels::cuda::IndexError* get() const;
  // indices: the (contiguous, Long) tensor the kernel checked.
  void throw_if_set(const Tensor& indices, const std::function<std::string(int64_t, int64_t)>& message) const;

 private:
  Device device_;
  Tensor flag_;
};

}  // namespace remat::ops
