// Mirrors ATen/native/cuda/Embedding.cu registration: embedding and embedding_dense_backward on
// CUDA, with ops/embedding.cpp's meta functions. The backward is deterministic (see
// kernels/cuda/embedding.h). Out-of-range indices throw after the kernel (one read-back of a
// device flag), naming the first offending index and its position as the CPU kernel does.
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/embedding.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// ops/embedding.cpp's message for the first index outside [0, num_rows).
std::function<std::string(int64_t, int64_t)> index_error(const char* op, int64_t num_rows) {
  return [op, num_rows](int64_t index, int64_t position) {
    return detail::str(op, ": index out of range in self: index ", index, " (at position ", position,
                       ") is not in [0, ", num_rows, ") for a weight with ", num_rows, " rows");
  };
}

Tensor embedding_cuda(const Tensor& weight, const Tensor& indices) {
  TensorMeta m = embedding_meta(weight, indices);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  Tensor idx = contiguous_cuda(indices);
  if (idx.numel() == 0) return out;
  Tensor w = contiguous_cuda(weight);
  const int64_t num_weights = weight.sizes()[0];
  CUDAIndexError error(m.device);
  kc::embedding_forward(weight.dtype(), w.data_ptr(), static_cast<const int64_t*>(idx.data_ptr()), out.data_ptr(),
                        idx.numel(), num_weights, weight.sizes()[1], error.get(), cuda_stream(m.device));
  error.throw_if_set(idx, index_error("aten::embedding", num_weights));
  return out;
}

Tensor embedding_dense_backward_cuda(const Tensor& grad_output, const Tensor& indices, int64_t num_weights) {
  TensorMeta m = embedding_backward_meta(grad_output, indices, num_weights);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  Tensor idx = contiguous_cuda(indices), dy = contiguous_cuda(grad_output);
  const int64_t n = idx.numel();
  Tensor ws = cuda_workspace(kc::embedding_backward_workspace_bytes(n, num_weights), m.device);
  CUDAIndexError error(m.device);
  kc::embedding_backward(m.dtype, dy.data_ptr(), static_cast<const int64_t*>(idx.data_ptr()), out.data_ptr(), n,
                         num_weights, m.sizes[1], ws.data_ptr(), error.get(), cuda_stream(m.device));
  if (n > 0) error.throw_if_set(idx, index_error("aten::embedding_dense_backward", num_weights));
  return out;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("embedding", REMAT_FN(embedding_cuda));
  m.impl("embedding_dense_backward", REMAT_FN(embedding_dense_backward_cuda));
}

}  // namespace remat::ops
