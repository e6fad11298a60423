// Mirrors ATen/native/transformers/cuda/attention.cu (_scaled_dot_product_efficient_attention_cuda)
// and attention_backward.cu (_scaled_dot_product_efficient_attention_backward_cuda): the fused
// attention's CUDA kernels, registered from their Defs (ops/attention_defs.h: the meta functions,
// in ops/efficient_attention.cpp, whose header lists where remat differs from PyTorch, and the
// buffers the Meta kernels allocate too) over kernels/cuda/attention.h. Nothing is allocated
// besides the outputs.
#include <optional>
#include <tuple>

#include "engine/dispatch/library.h"
#include "kernels/cuda/attention.h"
#include "ops/attention_defs.h"
#include "ops/cuda/cuda_utils.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

kc::AttentionStrides strides_of(const Tensor& t) {
  return {t.strides()[0], t.strides()[1], t.strides()[2], t.strides()[3]};
}
kc::AttentionSizes sizes_of(const AttentionGeometry& g) { return {g.B, g.H, g.L, g.S, g.E}; }

void efficient_attention_cuda(const char*, const AttentionGeometry& g, const EfficientForwardBuffers& b,
                              const Tensor& query, const Tensor& key, const Tensor& value, const Tensor&,
                              bool compute_log_sumexp, double, bool is_causal, std::optional<double>) {
  kc::attention_forward(query.dtype(), b.out.data_ptr(), strides_of(b.out),
                        compute_log_sumexp ? b.lse.data_ptr() : nullptr, g.lse_len, query.data_ptr(),
                        strides_of(query), key.data_ptr(), strides_of(key), value.data_ptr(), strides_of(value),
                        sizes_of(g), is_causal, g.scale, cuda_stream(query.device()));
}

void efficient_attention_backward_cuda(const char*, const AttentionGeometry& g, const EfficientBackwardBuffers& b,
                                       const Tensor& grad_out, const Tensor& query, const Tensor& key,
                                       const Tensor& value, const Tensor&, const Tensor& out, const Tensor& logsumexp,
                                       const Tensor& /*philox_seed: no dropout, nothing to replay*/,
                                       const Tensor& /*philox_offset*/, double, bool is_causal,
                                       std::optional<double>) {
  kc::attention_backward(query.dtype(), b.dq.data_ptr(), strides_of(b.dq), b.dk.data_ptr(), strides_of(b.dk),
                         b.dv.data_ptr(), strides_of(b.dv), grad_out.data_ptr(), strides_of(grad_out),
                         query.data_ptr(), strides_of(query), key.data_ptr(), strides_of(key), value.data_ptr(),
                         strides_of(value), out.data_ptr(), strides_of(out), logsumexp.data_ptr(), g.lse_len,
                         sizes_of(g), is_causal, g.scale, cuda_stream(query.device()));
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  using structured::CUDABackend;
  using structured::impl_buffered;
  impl_buffered<structured__scaled_dot_product_efficient_attention, CUDABackend, CUDACopies,
                &efficient_attention_cuda>(m);
  impl_buffered<structured__scaled_dot_product_efficient_attention_backward, CUDABackend, CUDACopies,
                &efficient_attention_backward_cuda>(m);
}

}  // namespace remat::ops
