// Mirrors ATen/native/cuda/Embedding.cu registration: embedding and embedding_dense_backward on
// CUDA, from their Defs (ops/embedding_defs.h: the meta function, and the temporaries the Meta
// kernel imitating CUDA makes too). The backward is deterministic (see
// kernels/cuda/embedding.h). Out-of-range indices throw after the kernel (one read-back of a
// device flag), naming the first offending index and its position as the CPU kernel does.
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/embedding.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/embedding_defs.h"
#include "ops/meta.h"
#include "ops/structured.h"

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

// The Defs' CUDA kernels (TORCH_IMPL_FUNC): the output has the meta function's geometry; they run
// on an empty output too (the Defs' runs_on_empty): any index is checked.
void embedding_cuda(const char* op, const Tensor& out, const Tensor& weight, const Tensor& indices) {
  const EmbeddingTemporaries r = embedding_temporaries<CUDACopies, kCUDA>(out, weight, indices);
  if (r.idx.numel() == 0) return;
  const int64_t num_weights = weight.sizes()[0];
  CUDAIndexError error(r.flag);
  kc::embedding_forward(weight.dtype(), r.w.data_ptr(), static_cast<const int64_t*>(r.idx.data_ptr()),
                        out.data_ptr(), r.idx.numel(), num_weights, weight.sizes()[1], error.get(),
                        cuda_stream(out.device()));
  error.throw_if_set(r.idx, index_error(op, num_weights));
}

void embedding_dense_backward_cuda(const char* op, const Tensor& grad_weight, const Tensor& grad_output,
                                   const Tensor& indices, int64_t num_weights) {
  const EmbeddingBackwardTemporaries r =
      embedding_backward_temporaries<CUDACopies, kCUDA>(grad_weight, grad_output, indices, num_weights);
  const int64_t n = r.idx.numel();
  CUDAIndexError error(r.flag);
  kc::embedding_backward(grad_weight.dtype(), r.dy.data_ptr(), static_cast<const int64_t*>(r.idx.data_ptr()),
                         grad_weight.data_ptr(), n, num_weights, grad_weight.sizes()[1], r.workspace.data_ptr(),
                         error.get(), cuda_stream(grad_weight.device()));
  if (n > 0) error.throw_if_set(r.idx, index_error(op, num_weights));
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  using structured::CUDABackend;
  using structured::impl;
  impl<structured_embedding, CUDABackend, &embedding_cuda>(m);
  impl<structured_embedding_dense_backward, CUDABackend, &embedding_dense_backward_cuda>(m);
}

}  // namespace remat::ops
