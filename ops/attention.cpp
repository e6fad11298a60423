// Mirrors ATen/native/transformers/attention.cpp (_scaled_dot_product_attention_math): attention
// as a composite of primitive ops, so autograd, dispatch modes and SAC policies see its bmm,
// softmax and dropout rather than one opaque op.
//
//   scores = matmul(q, k^T) * (1 / sqrt(E))
//   scores = masked_fill(scores, triu(ones(L, S), 1), -inf)     (is_causal; top-left aligned)
//   attn   = softmax(scores, -1), then dropout(attn, dropout_p)   (dropout_p > 0)
//   out    = matmul(attn, v)
//
// Intermediates are kept to the minimum: the scaling is one mul by a scalar (no scale tensor),
// the causal mask is one [L, S] Bool tensor broadcast over the batch.
#include <cmath>
#include <limits>

#include "engine/dispatch/library.h"
#include "ops/composite.h"
#include "ops/functions.h"
#include "ops/op_utils.h"

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

Tensor scaled_dot_product_attention_composite(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal,
                                              double dropout_p, Generator* generator) {
  check_attention_args(q, k, v);
  REMAT_CHECK(dropout_p >= 0.0 && dropout_p <= 1.0,
              "aten::scaled_dot_product_attention: dropout probability has to be between 0 and 1, but got ", dropout_p);
  const int64_t L = q.sizes()[q.dim() - 2], S = k.sizes()[k.dim() - 2], E = q.sizes().back();
  Tensor scores = mul(matmul(q, transpose(k, -2, -1)), 1.0 / std::sqrt(static_cast<double>(E)));
  if (is_causal) {
    Tensor future = triu(ones({L, S}, TensorOptions().dtype(kBool).device(q.device())), 1);
    scores = masked_fill(scores, future, -std::numeric_limits<double>::infinity());
  }
  Tensor attn = softmax(scores, -1);
  if (dropout_p > 0.0) attn = dropout(attn, dropout_p, /*train=*/true, generator);
  return matmul(attn, v);
}

}  // namespace

REMAT_LIBRARY_FRAGMENT(aten, m) {
  impl_composite(m, "scaled_dot_product_attention", REMAT_FN(scaled_dot_product_attention_composite));
}

}  // namespace remat::ops
