// Mirrors ATen/native/cuda/SoftMax.cu registration: softmax, log_softmax and their backward
// kernels (_softmax_backward_data, _log_softmax_backward_data) on CUDA, with ops/softmax.cpp's
// meta functions and kernels/cuda/softmax.h.
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/softmax.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

Tensor softmax_forward_cuda(const char* op, const Tensor& self, int64_t dim, bool log) {
  TensorMeta m = softmax_meta(op, self, dim);
  cuda::CUDAGuard guard(m.device);
  Tensor out = empty_from(m);
  if (out.numel() == 0) return out;
  SoftmaxGeometry g = softmax_geometry(self.sizes(), maybe_wrap_dim(dim, self.dim(), op));
  Tensor x = contiguous_cuda(self);
  kc::softmax_forward(self.dtype(), x.data_ptr(), out.data_ptr(), g.outer, g.dim_size, g.inner, log,
                      cuda_stream(m.device));
  return out;
}

Tensor softmax_cuda(const Tensor& self, int64_t dim) { return softmax_forward_cuda("aten::softmax", self, dim, false); }
Tensor log_softmax_cuda(const Tensor& self, int64_t dim) {
  return softmax_forward_cuda("aten::log_softmax", self, dim, true);
}

Tensor softmax_backward_cuda(const char* op, const Tensor& grad_output, const Tensor& output, int64_t dim, bool log) {
  TensorMeta m = softmax_backward_meta(op, grad_output, output, dim);
  cuda::CUDAGuard guard(m.device);
  Tensor grad_input = empty_from(m);
  if (grad_input.numel() == 0) return grad_input;
  SoftmaxGeometry g = softmax_geometry(output.sizes(), maybe_wrap_dim(dim, output.dim(), op));
  Tensor dy = contiguous_cuda(grad_output), y = contiguous_cuda(output);
  kc::softmax_backward(output.dtype(), dy.data_ptr(), y.data_ptr(), grad_input.data_ptr(), g.outer, g.dim_size,
                       g.inner, log, cuda_stream(m.device));
  return grad_input;
}

Tensor softmax_backward_data_cuda(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  return softmax_backward_cuda("aten::_softmax_backward_data", grad_output, output, dim, false);
}
Tensor log_softmax_backward_data_cuda(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  return softmax_backward_cuda("aten::_log_softmax_backward_data", grad_output, output, dim, true);
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("softmax", REMAT_FN(softmax_cuda));
  m.impl("log_softmax", REMAT_FN(log_softmax_cuda));
  m.impl("_softmax_backward_data", REMAT_FN(softmax_backward_data_cuda));
  m.impl("_log_softmax_backward_data", REMAT_FN(log_softmax_backward_data_cuda));
}

}  // namespace remat::ops
