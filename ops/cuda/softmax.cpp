// Mirrors ATen/native/cuda/SoftMax.cu registration: softmax, log_softmax and their backward
// kernels (_softmax_backward_data, _log_softmax_backward_data) on CUDA, for the schemas of
// ops/native_functions.cpp.
//
// The checks below are written against those schemas; when ops/ gains the CPU kernels' meta
// functions for these ops, these should call them instead (as ops/cuda/pointwise.cpp does).
#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/softmax.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

// [outer, dim_size, inner] of a contiguous tensor around dim (a 0-d tensor is one element).
struct DimSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
DimSplit split_at(const Shape& sizes, int64_t dim) {
  DimSplit s;
  if (sizes.empty()) return s;
  s.outer = prod(sizes, 0, static_cast<size_t>(dim));
  s.size = sizes[static_cast<size_t>(dim)];
  s.inner = prod(sizes, static_cast<size_t>(dim) + 1, sizes.size());
  return s;
}

int64_t softmax_meta(const char* op, const Tensor& self, int64_t dim) {
  check_defined(op, self, "self");
  check_floating(op, self, "self");
  return maybe_wrap_dim(dim, self.dim(), op);
}

Tensor softmax_forward_cuda(const char* op, const Tensor& self, int64_t dim, bool log) {
  dim = softmax_meta(op, self, dim);
  cuda::CUDAGuard guard(self.device());
  Tensor x = contiguous_cuda(self);
  Tensor out = make_empty(self.sizes(), self.dtype(), self.device());
  DimSplit s = split_at(self.sizes(), dim);
  kc::softmax_forward(self.dtype(), x.data_ptr(), out.data_ptr(), s.outer, s.size, s.inner, log,
                      cuda_stream(self.device()));
  return out;
}

Tensor softmax_cuda(const Tensor& self, int64_t dim) { return softmax_forward_cuda("aten::softmax", self, dim, false); }
Tensor log_softmax_cuda(const Tensor& self, int64_t dim) {
  return softmax_forward_cuda("aten::log_softmax", self, dim, true);
}

Tensor softmax_backward_cuda(const char* op, const Tensor& grad, const Tensor& output, int64_t dim, bool log) {
  check_defined(op, grad, "grad_output");
  dim = softmax_meta(op, output, dim);
  common_device(op, {&grad, &output});
  REMAT_CHECK(grad.sizes() == output.sizes(), op, ": grad_output of shape ", grad.sizes(),
              " does not match output of shape ", output.sizes());
  cuda::CUDAGuard guard(output.device());
  Tensor g = contiguous_cuda(cast_cuda(grad, output.dtype()));
  Tensor y = contiguous_cuda(output);
  Tensor out = make_empty(output.sizes(), output.dtype(), output.device());
  DimSplit s = split_at(output.sizes(), dim);
  kc::softmax_backward(output.dtype(), g.data_ptr(), y.data_ptr(), out.data_ptr(), s.outer, s.size, s.inner, log,
                       cuda_stream(output.device()));
  return out;
}

Tensor softmax_backward_data_cuda(const Tensor& grad, const Tensor& output, int64_t dim) {
  return softmax_backward_cuda("aten::_softmax_backward_data", grad, output, dim, false);
}
Tensor log_softmax_backward_data_cuda(const Tensor& grad, const Tensor& output, int64_t dim) {
  return softmax_backward_cuda("aten::_log_softmax_backward_data", grad, output, dim, true);
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("softmax", REMAT_FN(softmax_cuda));
  m.impl("log_softmax", REMAT_FN(log_softmax_cuda));
  m.impl("_softmax_backward_data", REMAT_FN(softmax_backward_data_cuda));
  m.impl("_log_softmax_backward_data", REMAT_FN(log_softmax_backward_data_cuda));
}

}  // namespace remat::ops
