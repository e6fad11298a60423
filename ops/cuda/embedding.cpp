// Mirrors ATen/native/cuda/Embedding.cu registration: embedding and embedding_dense_backward on
// CUDA, for the schemas of ops/native_functions.cpp. The backward is deterministic (see
// kernels/cuda/embedding.h). Out-of-range indices throw after the kernel (one read-back of a
// device flag), naming one offending index.
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/embedding.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

void check_indices(const char* op, const Tensor& indices) {
  check_defined(op, indices, "indices");
  REMAT_CHECK(indices.dtype() == kLong, op,
              ": Expected tensor for argument #1 'indices' to have one of the following scalar types: Long; but got ",
              toString(indices.dtype()), " instead");
}

Tensor embedding_cuda(const Tensor& weight, const Tensor& indices) {
  const char* op = "aten::embedding";
  check_defined(op, weight, "weight");
  check_indices(op, indices);
  REMAT_CHECK(weight.dim() == 2, op, ": 'weight' must be 2-D (got shape ", weight.sizes(), ")");
  Device device = common_device(op, {&weight, &indices});
  cuda::CUDAGuard guard(device);
  const int64_t num_weights = weight.sizes()[0], dim = weight.sizes()[1];
  Shape out_sizes = indices.sizes();
  out_sizes.push_back(dim);
  Tensor out = make_empty(out_sizes, weight.dtype(), device);
  if (out.numel() == 0) return out;
  Tensor w = contiguous_cuda(weight), idx = contiguous_cuda(indices);
  CUDAIndexError error(device);
  kc::embedding_forward(weight.dtype(), w.data_ptr(), static_cast<const int64_t*>(idx.data_ptr()), out.data_ptr(),
                        idx.numel(), num_weights, dim, error.get(), cuda_stream(device));
  error.throw_if_set(detail::str(op, ": index out of range in self (num_weights ", num_weights, ")"));
  return out;
}

Tensor embedding_dense_backward_cuda(const Tensor& grad, const Tensor& indices, int64_t num_weights) {
  const char* op = "aten::embedding_dense_backward";
  check_defined(op, grad, "grad_output");
  check_indices(op, indices);
  check_floating(op, grad, "grad_output");
  Device device = common_device(op, {&grad, &indices});
  REMAT_CHECK(num_weights >= 0, op, ": num_weights must be non-negative (got ", num_weights, ")");
  REMAT_CHECK(grad.dim() == indices.dim() + 1 &&
                  Shape(grad.sizes().begin(), grad.sizes().end() - 1) == indices.sizes(),
              op, ": grad_output of shape ", grad.sizes(), " does not match indices of shape ", indices.sizes(),
              " (expected indices' shape + [embedding_dim])");
  cuda::CUDAGuard guard(device);
  const int64_t dim = grad.sizes().back(), n = indices.numel();
  Tensor out = make_empty({num_weights, dim}, grad.dtype(), device);
  if (out.numel() == 0) return out;
  Tensor g = contiguous_cuda(grad), idx = contiguous_cuda(indices);
  Tensor ws = cuda_workspace(kc::embedding_backward_workspace_bytes(n, num_weights), device);
  CUDAIndexError error(device);
  kc::embedding_backward(grad.dtype(), g.data_ptr(), static_cast<const int64_t*>(idx.data_ptr()), out.data_ptr(), n,
                         num_weights, dim, ws.data_ptr(), error.get(), cuda_stream(device));
  error.throw_if_set(detail::str(op, ": index out of range in self (num_weights ", num_weights, ")"));
  return out;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("embedding", REMAT_FN(embedding_cuda));
  m.impl("embedding_dense_backward", REMAT_FN(embedding_dense_backward_cuda));
}

}  // namespace remat::ops
