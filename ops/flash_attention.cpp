// Mirrors ATen/native/transformers/attention.cpp (_scaled_dot_product_flash_attention_cpu and
// its backward): the fused attention op, one dispatcher op whose backward recomputes the
// attention weights from q, k and the row log-sum-exp instead of saving them. The loops are in
// kernels/cpu/flash_attention.cpp.
//
//   output, logsumexp = _scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout_p, is_causal)
//   q [B, H, L, E], k and v [B, H, S, E] -> output [B, H, L, E], logsumexp [B, H, L] (float32 for
//   a float32/bfloat16/half input, float64 for float64)
//
// Layouts are PyTorch's: output is written as [B, L, H, E] in memory and returned as its [B, H, L,
// E] transpose (so output.transpose(1, 2), the heads side by side, is contiguous), logsumexp is
// [B, L, H] in memory returned as [B, H, L]; the gradients of q, k and v have the same layout.
// Inputs may be any strided views whose head dim has stride 1 (else that input is copied).
// remat supports neither dropout nor an explicit attn_mask here: both throw, naming the op.
#include <cmath>
#include <optional>
#include <tuple>

#include "engine/dispatch/library.h"
#include "kernels/cpu/flash_attention.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace remat::ops {
namespace {

namespace cpu = kernels::cpu;

constexpr const char* kForward = "aten::_scaled_dot_product_flash_attention_for_cpu";
constexpr const char* kBackward = "aten::_scaled_dot_product_flash_attention_for_cpu_backward";

struct FlashGeometry {
  cpu::AttentionSizes n;
  ScalarType stat_dtype;  // logsumexp's
};

ScalarType accumulate_dtype(ScalarType t) { return t == kDouble ? kDouble : kFloat; }

void check_supported(const char* op, double dropout_p, const Tensor& attn_mask) {
  REMAT_CHECK(dropout_p == 0.0, op, ": dropout_p = ", dropout_p,
              " is not supported by remat's fused attention (only 0); use the math backend "
              "(sdpa_kernel(SDPBackend::MATH)) for attention dropout");
  REMAT_CHECK(!attn_mask.defined(), op, ": an explicit attn_mask (got shape ", attn_mask.sizes(),
              ") is not supported by remat's fused attention; use is_causal, or the math backend");
}

// The meta function (shared by the CPU and Meta kernels): q [B, H, L, E], k and v [B, H, S, E].
FlashGeometry flash_meta(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  check_attention_operands(op, q, k, v);
  REMAT_CHECK(q.device().is_cpu() || q.is_meta(), op, ": expected CPU (or Meta) tensors, but got ",
              q.device().str());
  check_floating(op, q, "query");
  check_attention_layout(op, q, k, v);
  FlashGeometry g;
  g.n = {q.size(0), q.size(1), q.size(2), k.size(2), q.size(3)};
  g.stat_dtype = accumulate_dtype(q.dtype());
  return g;
}

// [B, H, rows, E] laid out as [B, rows, H, E] (PyTorch's output and gradient layout).
Tensor empty_heads_interleaved(const cpu::AttentionSizes& n, int64_t rows, ScalarType dtype, Device device) {
  return make_empty_strided({n.B, n.H, rows, n.E}, {rows * n.H * n.E, n.E, n.H * n.E, 1}, dtype, device);
}
// [B, H, L] laid out as [B, L, H].
Tensor empty_logsumexp(const FlashGeometry& g, Device device) {
  const cpu::AttentionSizes& n = g.n;
  return make_empty_strided({n.B, n.H, n.L}, {n.L * n.H, 1, n.H}, g.stat_dtype, device);
}

// The operand as the kernel reads it: itself when its head dim has stride 1, else a copy. Run on
// the CPU and the Meta path alike, so that both allocate the same.
Tensor unit_stride_head_dim(const Tensor& t) {
  return t.size(-1) <= 1 || t.strides().back() == 1 ? t : contiguous_cpu(t);
}
cpu::HeadStrides head_strides(const Tensor& t) { return {t.strides()[0], t.strides()[1], t.strides()[2]}; }

double softmax_scale(const FlashGeometry& g, std::optional<double> scale) {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(g.n.E));
}

void check_backward_args(const FlashGeometry& g, const Tensor& grad_out, const Tensor& q, const Tensor& out,
                         const Tensor& lse) {
  check_attention_backward_operands(kBackward, grad_out, q, out, lse);
  const Shape lse_shape{g.n.B, g.n.H, g.n.L};
  REMAT_CHECK(lse.sizes() == lse_shape && lse.dtype() == g.stat_dtype, kBackward, ": expected logsumexp of shape ",
              lse_shape, " and dtype ", toString(g.stat_dtype), ", but got ", lse.sizes(), " ",
              toString(lse.dtype()));
}

std::tuple<Tensor, Tensor> flash_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                           double dropout_p, bool is_causal, const Tensor& attn_mask,
                                           std::optional<double> scale) {
  FlashGeometry g = flash_meta(kForward, query, key, value);
  check_supported(kForward, dropout_p, attn_mask);
  const Device device = query.device();
  Tensor q = unit_stride_head_dim(query), k = unit_stride_head_dim(key), v = unit_stride_head_dim(value);
  Tensor out = empty_heads_interleaved(g.n, g.n.L, query.dtype(), device);
  Tensor lse = empty_logsumexp(g, device);
  if (device.is_meta()) return {out, lse};
  REMAT_DISPATCH_FLOATING_TYPES(query.dtype(), kForward, [&] {
    using A = cpu::acc_t<scalar_t>;
    cpu::flash_attention_forward<scalar_t>(out.data_ptr<scalar_t>(), head_strides(out), lse.data_ptr<A>(),
                                           head_strides(lse), q.data_ptr<scalar_t>(), head_strides(q),
                                           k.data_ptr<scalar_t>(), head_strides(k), v.data_ptr<scalar_t>(),
                                           head_strides(v), g.n, is_causal, A(softmax_scale(g, scale)));
  });
  return {out, lse};
}

std::tuple<Tensor, Tensor, Tensor> flash_attention_backward(const Tensor& grad_out, const Tensor& query,
                                                            const Tensor& key, const Tensor& value, const Tensor& out,
                                                            const Tensor& logsumexp, double dropout_p, bool is_causal,
                                                            const Tensor& attn_mask, std::optional<double> scale) {
  FlashGeometry g = flash_meta(kBackward, query, key, value);
  check_supported(kBackward, dropout_p, attn_mask);
  check_backward_args(g, grad_out, query, out, logsumexp);
  const Device device = query.device();
  Tensor dout = unit_stride_head_dim(grad_out), o = unit_stride_head_dim(out);
  Tensor q = unit_stride_head_dim(query), k = unit_stride_head_dim(key), v = unit_stride_head_dim(value);
  Tensor dq = empty_heads_interleaved(g.n, g.n.L, query.dtype(), device);
  Tensor dk = empty_heads_interleaved(g.n, g.n.S, query.dtype(), device);
  Tensor dv = empty_heads_interleaved(g.n, g.n.S, query.dtype(), device);
  if (device.is_meta()) return {dq, dk, dv};
  REMAT_DISPATCH_FLOATING_TYPES(query.dtype(), kBackward, [&] {
    using A = cpu::acc_t<scalar_t>;
    cpu::flash_attention_backward<scalar_t>(
        dq.data_ptr<scalar_t>(), head_strides(dq), dk.data_ptr<scalar_t>(), head_strides(dk),
        dv.data_ptr<scalar_t>(), head_strides(dv), dout.data_ptr<scalar_t>(), head_strides(dout),
        q.data_ptr<scalar_t>(), head_strides(q), k.data_ptr<scalar_t>(), head_strides(k), v.data_ptr<scalar_t>(),
        head_strides(v), o.data_ptr<scalar_t>(), head_strides(o), logsumexp.data_ptr<A>(), head_strides(logsumexp),
        g.n, is_causal, A(softmax_scale(g, scale)));
  });
  return {dq, dk, dv};
}

}  // namespace

void check_attention_operands(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  check_defined(op, q, "query");
  check_defined(op, k, "key");
  check_defined(op, v, "value");
  common_device(op, {&q, &k, &v});
}

void check_attention_layout(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  REMAT_CHECK(q.dtype() == k.dtype() && q.dtype() == v.dtype(), op,
              ": Expected query, key, and value to have the same dtype, but got query.dtype: ", toString(q.dtype()),
              " key.dtype: ", toString(k.dtype()), " and value.dtype: ", toString(v.dtype()), " instead.");
  REMAT_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op,
              ": expected query, key and value to be 4-D ([B, H, L, E]), but got shapes ", q.sizes(), ", ", k.sizes(),
              " and ", v.sizes());
  REMAT_CHECK(k.sizes() == v.sizes(), op, ": key and value must have the same shape [B, H, S, E], but got ",
              k.sizes(), " and ", v.sizes());
  REMAT_CHECK(q.size(0) == k.size(0) && q.size(1) == k.size(1) && q.size(3) == k.size(3), op,
              ": query [B, H, L, E] and key [B, H, S, E] must agree in B, H and E (Q/K/V should have the same head "
              "size), but got ",
              q.sizes(), " and ", k.sizes());
}

void check_attention_backward_operands(const char* op, const Tensor& grad_out, const Tensor& q, const Tensor& out,
                                       const Tensor& lse) {
  check_defined(op, grad_out, "grad_out");
  check_defined(op, out, "out");
  check_defined(op, lse, "logsumexp");
  common_device(op, {&q, &grad_out, &out, &lse});
  REMAT_CHECK(grad_out.sizes() == q.sizes() && out.sizes() == q.sizes(), op,
              ": grad_out and out must have query's shape ", q.sizes(), ", but got ", grad_out.sizes(), " and ",
              out.sizes());
  REMAT_CHECK(grad_out.dtype() == q.dtype() && out.dtype() == q.dtype(), op,
              ": grad_out and out must have query's dtype ", toString(q.dtype()), ", but got ",
              toString(grad_out.dtype()), " and ", toString(out.dtype()));
}

// One function serves both backends: on Meta it allocates what the CPU kernel allocates (the
// same outputs, the same copies of a non-unit-stride input) and runs no loop.
REMAT_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("_scaled_dot_product_flash_attention_for_cpu", REMAT_FN(flash_attention));
  m.impl("_scaled_dot_product_flash_attention_for_cpu_backward", REMAT_FN(flash_attention_backward));
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("_scaled_dot_product_flash_attention_for_cpu", REMAT_FN(flash_attention));
  m.impl("_scaled_dot_product_flash_attention_for_cpu_backward", REMAT_FN(flash_attention_backward));
}

}  // namespace remat::ops
