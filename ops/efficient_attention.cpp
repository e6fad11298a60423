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
#include "ops/attention_defs.h"
#include "ops/meta.h"
#include "ops/meta_copies.h"

namespace remat::ops {
namespace {

AttentionGeometry check_inputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
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
  AttentionGeometry g = attention_geometry(q, k, scale);
  const int64_t align = kernels::cuda::kAttentionLseAlign;
  g.lse_len = (g.L + align - 1) / align * align;
  g.lse_dtype = q.dtype();
  return g;
}

}  // namespace

Tensor zero_philox_cpu() {
  Tensor t = make_empty({}, kLong, Device{kCPU});
  *t.data_ptr<int64_t>() = 0;
  return t;
}

AttentionGeometry efficient_attention_meta(const char* op, const Tensor& query, const Tensor& key, const Tensor& value,
                                           const Tensor& attn_bias, bool, double dropout_p, bool,
                                           std::optional<double> scale) {
  return check_inputs(op, query, key, value, attn_bias, dropout_p, scale);
}

AttentionGeometry efficient_attention_backward_meta(const char* op, const Tensor& grad_out, const Tensor& query,
                                                    const Tensor& key, const Tensor& value, const Tensor& attn_bias,
                                                    const Tensor& out, const Tensor& logsumexp, const Tensor&,
                                                    const Tensor&, double dropout_p, bool,
                                                    std::optional<double> scale) {
  AttentionGeometry g = check_inputs(op, query, key, value, attn_bias, dropout_p, scale);
  check_attention_backward_operands(op, grad_out, query, out, logsumexp);
  const Shape lse_shape{g.B, g.H, g.lse_len};
  // (numel() == 0: remat's is_contiguous() says false for some empty shapes, e.g. [1, 2, 0]; PyTorch's says true.)
  const bool contiguous = logsumexp.numel() == 0 || logsumexp.is_contiguous();
  REMAT_CHECK(logsumexp.sizes() == lse_shape && logsumexp.dtype() == query.dtype() && contiguous, op,
              ": expected a contiguous logsumexp of shape ", lse_shape, " and dtype ", toString(query.dtype()),
              " (the forward's, run with compute_log_sumexp=True), but got ", logsumexp.sizes(), " ",
              toString(logsumexp.dtype()));
  return g;
}

// The schemas from the Defs (ops/attention_defs.h); the Meta kernels, which allocate what the CUDA
// kernels allocate by the Defs' buffers (the op has no CPU kernel).
REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_efficient_attention_def([&](auto def) { structured::define<typename decltype(def)::type>(m, {}); });
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  for_each_efficient_attention_def(
      [&](auto def) { structured::impl_meta_buffered<typename decltype(def)::type, MetaCopies>(m); });
}

}  // namespace remat::ops
