// Mirrors ATen/native/transformers/attention.cpp (scaled_dot_product_attention,
// _scaled_dot_product_attention_math) and sdp_utils_cpp.cpp (select_sdp_backend_cpp): the
// composite that picks a backend. The math path (remat's default) is a composite of primitive
// ops, so autograd, dispatch modes and SAC policies see its bmm, softmax and dropout rather than
// one opaque op; under sdpa_kernel(SDPBackend::FLASH_ATTENTION) it calls the fused op of the device
// where that op's constraints hold, else math if enabled (sdp_utils.cpp's select_sdp_backend):
//   * CPU (and Meta, counting like the CPU): aten::_scaled_dot_product_flash_attention_for_cpu
//     (PyTorch's CPU checks: 4-D, a floating dtype, no dropout, unit-stride head dims);
//   * CUDA (and Meta while a dry run counts like CUDA, meta_accounting() == kCUDA):
//     aten::_scaled_dot_product_efficient_attention (ops/cuda/attention.cpp), PyTorch's choice
//     for float32 on CUDA (its flash kernel needs 16-bit inputs): 4-D, Float or Double, no
//     dropout, a head dim of at most kAttentionMaxHeadDim. Its log_sumexp is computed when
//     backward will need it (grad mode on and an input requiring grad), as PyTorch's
//     should_compute_logsumexp.
//
// The math path:
//   scores = matmul(q, k^T) * (1 / sqrt(E))
//   attn   = softmax(masked_fill(scores, triu(ones(L, S), 1), -inf), -1)   (is_causal; top-left aligned)
//            softmax(scores, -1)                                           (not causal)
//   attn   = dropout(attn, dropout_p)                                      (dropout_p > 0)
//   out    = matmul(attn, v)
//
// That is nanoGPT's attention, op for op (and so its PyTorch twin's, bench/torch_reference.py):
// a plan made here applies to the twin call by call (docs/pytorch.md). The scaling is one mul by
// a scalar (no scale tensor); the causal mask is one [L, S] Bool tensor broadcast over the batch.
// PyTorch's own math path scales q and k by sqrt(scale) each and adds a float mask in place before
// aten::_safe_softmax: two more saved [B, H, T, E] copies. (aten::_masked_softmax would read the
// mask inside the softmax, one pass where masked_fill and softmax take two, but PyTorch's GPT
// does not run it, and a plan must name the ops both sides run.)
#include <cmath>
#include <limits>
#include <string>

#include "engine/autograd/grad_mode.h"
#include "engine/core/allocator.h"
#include "engine/dispatch/library.h"
#include "kernels/cuda/workspace_sizes.h"
#include "ops/composite.h"
#include "ops/functions.h"
#include "ops/op_utils.h"
#include "ops/sdpa_kernel.h"

namespace remat::ops {
namespace {

void check_attention_args(const Tensor& q, const Tensor& k, const Tensor& v) {
  const char* op = "aten::scaled_dot_product_attention";
  check_defined(op, q, "query");
  check_defined(op, k, "key");
  check_defined(op, v, "value");
  check_floating(op, q, "query");
  common_device(op, {&q, &k, &v});
  REMAT_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), op,
              ": Expected query, key, and value to have the same dtype, but got query.dtype: ", toString(q.dtype()),
              " key.dtype: ", toString(k.dtype()), " and value.dtype: ", toString(v.dtype()), " instead.");
  REMAT_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, op,
              ": expected query, key and value to be at least 2-D ([..., L, E]), but got shapes ", q.sizes(), ", ",
              k.sizes(), " and ", v.sizes());
  REMAT_CHECK(q.sizes().back() == k.sizes().back(), op, ": query and key must have the same embedding dim E, but got ",
              q.sizes(), " and ", k.sizes());
  REMAT_CHECK(k.sizes()[k.dim() - 2] == v.sizes()[v.dim() - 2], op,
              ": key and value must have the same sequence length S, but got ", k.sizes(), " and ", v.sizes());
}

// Whether the fused op of these inputs is CUDA's (else the CPU's): on CUDA, and on Meta while a
// dry run counts like CUDA.
bool fused_is_cuda(const Tensor& q) { return q.is_cuda() || (q.is_meta() && meta_accounting() == kCUDA); }

// Why the fused op cannot run these arguments ("" when it can).
std::string fused_unusable_because(const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4)
    return detail::str("it needs 4-D [B, H, L, E] inputs, got ", q.sizes(), ", ", k.sizes(), " and ", v.sizes());
  if (k.sizes() != v.sizes() || q.size(0) != k.size(0) || q.size(1) != k.size(1) || q.size(3) != k.size(3))
    return detail::str("it needs equal B, H and head sizes, got ", q.sizes(), ", ", k.sizes(), " and ", v.sizes());
  if (dropout_p > 0.0) return detail::str("it has no dropout, got dropout_p = ", dropout_p);
  if (fused_is_cuda(q)) {
    if (q.dtype() != kFloat && q.dtype() != kDouble)
      return detail::str("on CUDA it takes Float and Double, got ", toString(q.dtype()));
    if (q.size(3) < 1 || q.size(3) > kernels::cuda::kAttentionMaxHeadDim)
      return detail::str("on CUDA it needs a head dim between 1 and ", kernels::cuda::kAttentionMaxHeadDim,
                         ", got ", q.size(3));
    return "";
  }
  for (const Tensor* t : {&q, &k, &v})
    if (t->size(-1) > 1 && t->strides().back() != 1)
      return detail::str("it needs a unit-stride head dim, got strides ", t->strides());
  return "";
}

Tensor fused_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal) {
  if (!fused_is_cuda(q)) return std::get<0>(_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, is_causal));
  const bool compute_log_sumexp =
      remat::autograd::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad());
  return std::get<0>(_scaled_dot_product_efficient_attention(q, k, v, Tensor(), compute_log_sumexp, 0.0, is_causal));
}

Tensor math_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal, double dropout_p,
                      Generator* generator) {
  const int64_t L = q.sizes()[q.dim() - 2], S = k.sizes()[k.dim() - 2], E = q.sizes().back();
  Tensor scores = mul(matmul(q, transpose(k, -2, -1)), 1.0 / std::sqrt(static_cast<double>(E)));
  Tensor attn;
  if (is_causal) {
    Tensor future = triu(ones({L, S}, TensorOptions().dtype(kBool).device(q.device())), 1);
    attn = softmax(masked_fill(scores, future, -std::numeric_limits<double>::infinity()), -1);
  } else {
    attn = softmax(scores, -1);
  }
  if (dropout_p > 0.0) attn = dropout(attn, dropout_p, /*train=*/true, generator);
  return matmul(attn, v);
}

Tensor scaled_dot_product_attention_composite(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal,
                                              double dropout_p, Generator* generator) {
  check_attention_args(q, k, v);
  REMAT_CHECK(dropout_p >= 0.0 && dropout_p <= 1.0,
              "aten::scaled_dot_product_attention: dropout probability has to be between 0 and 1, but got ", dropout_p);
  std::string flash_reason = "it is not enabled";
  for (SDPBackend backend : enabled_sdpa_backends()) {
    if (backend == SDPBackend::MATH) return math_attention(q, k, v, is_causal, dropout_p, generator);
    flash_reason = fused_unusable_because(q, k, v, dropout_p);
    if (flash_reason.empty()) return fused_attention(q, k, v, is_causal);
  }
  throw Error("aten::scaled_dot_product_attention: No available kernel. Aborting execution. FLASH_ATTENTION "
              "is the only backend enabled (sdpa_kernel) and cannot run these arguments: " + flash_reason);
}

}  // namespace

REMAT_LIBRARY_FRAGMENT(aten, m) {
  impl_composite(m, "scaled_dot_product_attention", REMAT_FN(scaled_dot_product_attention_composite));
}

}  // namespace remat::ops
