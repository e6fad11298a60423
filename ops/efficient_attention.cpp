// Mirrors ATen/native/transformers/cuda/attention.cu (_scaled_dot_product_efficient_attention_cuda)
// and attention_backward.cu (_scaled_dot_product_efficient_attention_backward_cuda): the meta
// function of the fused CUDA attention, shared by its CUDA kernels (ops/cuda/attention.cpp) and
// its Meta kernels here, so that a Meta dry run allocates what a CUDA run does, in the same order.
//
//   output, log_sumexp, philox_seed, philox_offset =
//       _scaled_dot_product_efficient_attention(q, k, v, attn_bias, compute_log_sumexp, dropout_p, is_causal)
//   q [B, H, L, E], k and v [B, H, S, E] -> output [B, H, L, E], log_sumexp [B, H, ceil(L / 32) * 32]
//   (rows past L are +inf) when compute_log_sumexp, else [B, H, 0]
//
// As PyTorch: output is written as [B, L, H, E] in memory and returned as its [B, H, L, E]
// transpose; philox_seed and philox_offset are 0-d Long CPU tensors (no dropout: unused). Where
// remat differs:
//   * log_sumexp has the input's dtype (Float, or Double for a Double input; PyTorch's kernel takes
//     no Double and its log_sumexp is always Float);
//   * the dtypes are Float and Double (PyTorch's: Float, Half, BFloat16); the head dim E is at
//     most kAttentionMaxHeadDim (kernels/cuda/workspace_sizes.h);
//   * no attn_bias and no dropout (both throw, naming the op and the value); philox_seed and
//     philox_offset are zero-filled, not left uninitialised;
//   * the backward takes no grad_input_mask (remat's schemas have no bool[]): it always computes
//     grad_query, grad_key and grad_value, and its fourth output (grad_attn_bias) is undefined;
//   * the gradients are laid out as output is ([B, rows, H, E] in memory), not with the strides of
//     query, key and value;
//   * the inputs may have any strides (the kernels read them as given), so nothing is copied.
#include <cmath>
#include <optional>
#include <tuple>

#include "engine/dispatch/library.h"
#include "kernels/cuda/workspace_sizes.h"
#include "ops/meta.h"

namespace remat::ops {
namespace {

constexpr const char* kForward = "aten::_scaled_dot_product_efficient_attention";
constexpr const char* kBackward = "aten::_scaled_dot_product_efficient_attention_backward";

EfficientAttentionGeometry check_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                                        const Tensor& attn_bias, double dropout_p, std::optional<double> scale) {
  check_attention_operands(op, q, k, v);  // CPU tensors never get here: the op has no CPU kernel
  check_attention_layout(op, q, k, v);
  REMAT_CHECK(q.dtype() == kFloat || q.dtype() == kDouble, op,
              ": remat's fused CUDA attention supports Float and Double inputs, but got query.dtype: ",
              toString(q.dtype()));
  REMAT_CHECK(q.size(3) >= 1 && q.size(3) <= kernels::cuda::kAttentionMaxHeadDim, op,
              ": the head dim E must be between 1 and ", kernels::cuda::kAttentionMaxHeadDim,
              " for remat's fused CUDA attention, but got E = ", q.size(3));
  REMAT_CHECK(!attn_bias.defined(), op, ": an attn_bias (got shape ", attn_bias.sizes(),
              ") is not supported by remat's fused CUDA attention; use is_causal, or the math backend");
  REMAT_CHECK(dropout_p == 0.0, op, ": dropout_p = ", dropout_p,
              " is not supported by remat's fused CUDA attention (only 0); use the math backend "
              "(sdpa_kernel(SDPBackend::MATH)) for attention dropout");
  EfficientAttentionGeometry g;
  g.B = q.size(0);
  g.H = q.size(1);
  g.L = q.size(2);
  g.S = k.size(2);
  g.E = q.size(3);
  const int64_t align = kernels::cuda::kAttentionLseAlign;
  g.lse_len = (g.L + align - 1) / align * align;
  g.scale = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(g.E));
  return g;
}

// [B, H, rows, E] laid out as [B, rows, H, E].
Tensor empty_heads_interleaved(const EfficientAttentionGeometry& g, int64_t rows, ScalarType dtype, Device device) {
  return make_empty_strided({g.B, g.H, rows, g.E}, {rows * g.H * g.E, g.E, g.H * g.E, 1}, dtype, device);
}

Tensor zero_long_scalar_cpu() {
  Tensor t = make_empty({}, kLong, Device{kCPU});
  *t.data_ptr<int64_t>() = 0;
  return t;
}

std::tuple<Tensor, Tensor, Tensor, Tensor> efficient_attention_meta_kernel(const Tensor& query, const Tensor& key,
                                                                           const Tensor& value, const Tensor& attn_bias,
                                                                           bool compute_log_sumexp, double dropout_p,
                                                                           bool is_causal, std::optional<double> scale) {
  (void)is_causal;
  EfficientAttentionForward f =
      efficient_attention_forward_outputs(query, key, value, attn_bias, compute_log_sumexp, dropout_p, scale);
  return {f.out, f.lse, f.philox_seed, f.philox_offset};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> efficient_attention_backward_meta_kernel(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_bias,
    const Tensor& out, const Tensor& logsumexp, const Tensor& philox_seed, const Tensor& philox_offset,
    double dropout_p, bool is_causal, std::optional<double> scale) {
  (void)philox_seed;
  (void)philox_offset;
  (void)is_causal;
  EfficientAttentionBackward b =
      efficient_attention_backward_outputs(grad_out, query, key, value, attn_bias, out, logsumexp, dropout_p, scale);
  return {b.dq, b.dk, b.dv, Tensor()};
}

}  // namespace

EfficientAttentionForward efficient_attention_forward_outputs(const Tensor& query, const Tensor& key,
                                                              const Tensor& value, const Tensor& attn_bias,
                                                              bool compute_log_sumexp, double dropout_p,
                                                              std::optional<double> scale) {
  EfficientAttentionForward f;
  f.g = check_inputs(kForward, query, key, value, attn_bias, dropout_p, scale);
  const Device device = query.device();
  f.out = empty_heads_interleaved(f.g, f.g.L, query.dtype(), device);
  f.lse = make_empty({f.g.B, f.g.H, compute_log_sumexp ? f.g.lse_len : 0}, query.dtype(), device);
  f.philox_seed = zero_long_scalar_cpu();
  f.philox_offset = zero_long_scalar_cpu();
  return f;
}

EfficientAttentionBackward efficient_attention_backward_outputs(const Tensor& grad_out, const Tensor& query,
                                                                const Tensor& key, const Tensor& value,
                                                                const Tensor& attn_bias, const Tensor& out,
                                                                const Tensor& logsumexp, double dropout_p,
                                                                std::optional<double> scale) {
  EfficientAttentionBackward b;
  b.g = check_inputs(kBackward, query, key, value, attn_bias, dropout_p, scale);
  check_attention_backward_operands(kBackward, grad_out, query, out, logsumexp);
  const Shape lse_shape{b.g.B, b.g.H, b.g.lse_len};
  // (numel() == 0: remat's is_contiguous() says false for some empty shapes, e.g. [1, 2, 0]; PyTorch's says true.)
  const bool contiguous = logsumexp.numel() == 0 || logsumexp.is_contiguous();
  REMAT_CHECK(logsumexp.sizes() == lse_shape && logsumexp.dtype() == query.dtype() && contiguous,
              kBackward, ": expected a contiguous logsumexp of shape ", lse_shape, " and dtype ",
              toString(query.dtype()), " (the forward's, run with compute_log_sumexp=True), but got ",
              logsumexp.sizes(), " ", toString(logsumexp.dtype()));
  const Device device = query.device();
  b.dq = empty_heads_interleaved(b.g, b.g.L, query.dtype(), device);
  b.dk = empty_heads_interleaved(b.g, b.g.S, query.dtype(), device);
  b.dv = empty_heads_interleaved(b.g, b.g.S, query.dtype(), device);
  return b;
}

REMAT_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("_scaled_dot_product_efficient_attention", REMAT_FN(efficient_attention_meta_kernel));
  m.impl("_scaled_dot_product_efficient_attention_backward", REMAT_FN(efficient_attention_backward_meta_kernel));
}

}  // namespace remat::ops
