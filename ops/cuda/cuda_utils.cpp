// Raw conversions and copies for the CUDA kernels of ops (no dispatch).
#include "ops/cuda/cuda_utils.h"
#include "ops/cuda_temporaries.h"

#include "engine/cuda/cuda_exception.h"
#include "engine/cuda/cuda_stream.h"
#include "kernels/cuda/copy.h"

namespace remat::ops {

namespace kc = kernels::cuda;

cudaStream_t cuda_stream(const Device& device) { return cuda::getCurrentCUDAStream(device.index).stream(); }

kc::StridedLoop cuda_loop(const Tensor& out, std::initializer_list<const Tensor*> inputs) {
  static_assert(kc::kMaxDims == kernels::cpu::kMaxDims && kc::kMaxOperands == kernels::cpu::kMaxOperands,
                "kernels::cuda::StridedLoop mirrors kernels::cpu::LoopShape");
  REMAT_CHECK(inputs.size() + 1 <= static_cast<size_t>(kc::kMaxOperands), "cuda_loop: too many operands");
  kernels::cpu::LoopShape s = make_loop(out, inputs);
  kc::StridedLoop l;
  l.ndim = s.ndim;
  for (int d = 0; d < s.ndim; ++d) {
    l.sizes[d] = s.sizes[d];
    for (int k = 0; k < s.noperands; ++k) l.strides[k][d] = s.strides[k][d];
  }
  return l;
}

void copy_into_cuda(const Tensor& out, const Tensor& in) {
  if (out.numel() == 0) return;
  REMAT_INTERNAL_ASSERT(out.is_cuda() && in.device() == out.device(), "copy_into_cuda: ", in.device(), " -> ",
                        out.device());
  if (isComplexType(out.dtype()) && in.dtype() == out.dtype())  // two reals per element
    return copy_into_cuda(complex_as_real(out, out.sizes()), complex_as_real(in, out.sizes()));
  cuda::CUDAGuard guard(out.device());
  kc::copy(out.dtype(), in.dtype(), cuda_loop(out, {&in}), out.data_ptr(), in.data_ptr(), cuda_stream(out.device()));
}

Tensor cast_cuda(const Tensor& t, ScalarType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = make_empty(t.sizes(), dtype, t.device());
  copy_into_cuda(out, t);
  return out;
}

Tensor contiguous_cuda(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor out = make_empty(t.sizes(), t.dtype(), t.device());
  copy_into_cuda(out, t);
  return out;
}

void fill_cuda(const Tensor& t, double value) {
  if (t.numel() == 0) return;
  cuda::CUDAGuard guard(t.device());
  kc::fill(t.dtype(), cuda_loop(t, {}), t.data_ptr(), value, cuda_stream(t.device()));
}

Tensor cuda_workspace(size_t nbytes, const Device& device) {
  return make_empty({cuda_temporaries::workspace_words(nbytes)}, kLong, device);
}

CUDAIndexError::CUDAIndexError(const Device& device) : CUDAIndexError(cuda_temporaries::index_error_flag(device)) {}

CUDAIndexError::CUDAIndexError(Tensor flag) : device_(flag.device()), flag_(std::move(flag)) {
  cuda::CUDAGuard guard(device_);
  static_assert(sizeof(kc::IndexError) == sizeof(int64_t), "IndexError is one 64-bit position");
  REMAT_CUDA_CHECK(cudaMemsetAsync(flag_.data_ptr(), 0x7F, sizeof(kc::IndexError), cuda_stream(device_)));
}

kc::IndexError* CUDAIndexError::get() const { return static_cast<kc::IndexError*>(flag_.data_ptr()); }

void CUDAIndexError::throw_if_set(const Tensor& indices,
                                  const std::function<std::string(int64_t, int64_t)>& message) const {
  kc::IndexError host{kc::kNoIndexError};
  Allocator* allocator = get_allocator(device_);
  allocator->copy_to_host(&host, flag_.data_ptr(), sizeof(host));  // waits for the stream
  if (host.position == kc::kNoIndexError) return;
  const auto position = static_cast<int64_t>(host.position);
  int64_t index = 0;
  allocator->copy_to_host(&index, static_cast<const int64_t*>(indices.data_ptr()) + position, sizeof(index));
  throw Error(message(index, position));
}

}  // namespace remat::ops
