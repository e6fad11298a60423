// Mirrors ATen/native/cuda/SoftMax.cu registration: softmax, log_softmax, _masked_softmax and
// their backward kernels (_softmax_backward_data, _log_softmax_backward_data,
// _masked_softmax_backward) on CUDA: their CUDA kernels over
// kernels/cuda/softmax.h, registered from their Defs (ops/softmax_defs.h, ops/structured.h).
#include "engine/dispatch/library.h"
#include "kernels/cuda/softmax.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"
#include "ops/softmax_defs.h"
#include "ops/structured.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

template <bool kLog>
void softmax_cuda(const char* op, const Tensor& out, const Tensor& self, int64_t dim) {
  SoftmaxGeometry g = softmax_geometry(self.sizes(), maybe_wrap_dim(dim, self.dim(), op));
  Tensor x = contiguous_cuda(self);
  kc::softmax_forward(self.dtype(), x.data_ptr(), out.data_ptr(), g.outer, g.dim_size, g.inner, kLog,
                      cuda_stream(out.device()));
}

template <bool kLog>
void softmax_backward_cuda(const char* op, const Tensor& grad_input, const Tensor& grad_output, const Tensor& output,
                           int64_t dim) {
  SoftmaxGeometry g = softmax_geometry(output.sizes(), maybe_wrap_dim(dim, output.dim(), op));
  Tensor dy = contiguous_cuda(grad_output), y = contiguous_cuda(output);
  kc::softmax_backward(output.dtype(), dy.data_ptr(), y.data_ptr(), grad_input.data_ptr(), g.outer, g.dim_size,
                       g.inner, kLog, cuda_stream(grad_input.device()));
}

void masked_softmax_cuda(const char* op, const Tensor& out, const Tensor& self, const Tensor& mask,
                         std::optional<int64_t> dim, std::optional<int64_t> mask_type) {
  MaskedSoftmaxGeometry g = masked_softmax_geometry(self.sizes(), mask);
  const MaskedSoftmaxTemporaries r = masked_softmax_temporaries<CUDACopies>(out, self, mask, dim, mask_type);
  kc::masked_softmax_forward(self.dtype(), r.x.data_ptr(), static_cast<const bool*>(r.mask.data_ptr()),
                             out.data_ptr(), g.rows, g.dim_size, g.mask_rows, cuda_stream(out.device()));
}

void masked_softmax_backward_cuda(const char* op, const Tensor& grad_input, const Tensor& grad_output,
                                  const Tensor& output, const Tensor& mask, std::optional<int64_t> dim) {
  MaskedSoftmaxGeometry g = masked_softmax_geometry(output.sizes(), mask);
  const MaskedSoftmaxBackwardTemporaries r =
      masked_softmax_backward_temporaries<CUDACopies>(grad_input, grad_output, output, mask, dim);
  kc::masked_softmax_backward(output.dtype(), r.dy.data_ptr(), r.y.data_ptr(),
                              static_cast<const bool*>(r.mask.data_ptr()), grad_input.data_ptr(), g.rows, g.dim_size,
                              g.mask_rows, cuda_stream(grad_input.device()));
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  using structured::CUDABackend;
  using structured::impl;
  impl<structured_softmax, CUDABackend, &softmax_cuda<false>>(m);
  impl<structured_log_softmax, CUDABackend, &softmax_cuda<true>>(m);
  impl<structured__softmax_backward_data, CUDABackend, &softmax_backward_cuda<false>>(m);
  impl<structured__log_softmax_backward_data, CUDABackend, &softmax_backward_cuda<true>>(m);
  impl<structured__masked_softmax, CUDABackend, &masked_softmax_cuda>(m);
  impl<structured__masked_softmax_backward, CUDABackend, &masked_softmax_backward_cuda>(m);
}

}  // namespace remat::ops
