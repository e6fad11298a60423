// Mirrors ATen/native/transformers/cuda/attention.cu (_scaled_dot_product_efficient_attention_cuda)
// and attention_backward.cu (_scaled_dot_product_efficient_attention_backward_cuda): the fused
// attention's CUDA kernels, with ops/efficient_attention.cpp's meta function (its checks and
// outputs, shared with the Meta kernels; the header there lists where remat differs from PyTorch)
// and kernels/cuda/attention.h. Nothing is allocated besides the outputs.
#include <optional>
#include <tuple>

#include "engine/cuda/cuda_guard.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/attention.h"
#include "ops/cuda/cuda_utils.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

namespace kc = kernels::cuda;

kc::AttentionStrides strides_of(const Tensor& t) {
  return {t.strides()[0], t.strides()[1], t.strides()[2], t.strides()[3]};
}
kc::AttentionSizes sizes_of(const EfficientAttentionGeometry& g) { return {g.B, g.H, g.L, g.S, g.E}; }

std::tuple<Tensor, Tensor, Tensor, Tensor> efficient_attention_cuda(const Tensor& query, const Tensor& key,
                                                                    const Tensor& value, const Tensor& attn_bias,
                                                                    bool compute_log_sumexp, double dropout_p,
                                                                    bool is_causal, std::optional<double> scale) {
  cuda::CUDAGuard guard(query.device());
  EfficientAttentionForward f =
      efficient_attention_forward_outputs(query, key, value, attn_bias, compute_log_sumexp, dropout_p, scale);
  kc::attention_forward(query.dtype(), f.out.data_ptr(), strides_of(f.out),
                        compute_log_sumexp ? f.lse.data_ptr() : nullptr, f.g.lse_len, query.data_ptr(),
                        strides_of(query), key.data_ptr(), strides_of(key), value.data_ptr(), strides_of(value),
                        sizes_of(f.g), is_causal, f.g.scale, cuda_stream(query.device()));
  return {f.out, f.lse, f.philox_seed, f.philox_offset};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> efficient_attention_backward_cuda(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_bias,
    const Tensor& out, const Tensor& logsumexp, const Tensor& philox_seed, const Tensor& philox_offset,
    double dropout_p, bool is_causal, std::optional<double> scale) {
  (void)philox_seed;  // no dropout: nothing to replay
  (void)philox_offset;
  cuda::CUDAGuard guard(query.device());
  EfficientAttentionBackward b =
      efficient_attention_backward_outputs(grad_out, query, key, value, attn_bias, out, logsumexp, dropout_p, scale);
  kc::attention_backward(query.dtype(), b.dq.data_ptr(), strides_of(b.dq), b.dk.data_ptr(), strides_of(b.dk),
                         b.dv.data_ptr(), strides_of(b.dv), grad_out.data_ptr(), strides_of(grad_out),
                         query.data_ptr(), strides_of(query), key.data_ptr(), strides_of(key), value.data_ptr(),
                         strides_of(value), out.data_ptr(), strides_of(out), logsumexp.data_ptr(), b.g.lse_len,
                         sizes_of(b.g), is_causal, b.g.scale, cuda_stream(query.device()));
  return {b.dq, b.dk, b.dv, Tensor()};
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CUDA, m) {
  m.impl("_scaled_dot_product_efficient_attention", REMAT_FN(efficient_attention_cuda));
  m.impl("_scaled_dot_product_efficient_attention_backward", REMAT_FN(efficient_attention_backward_cuda));
}

}  // namespace remat::ops
