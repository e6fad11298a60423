// Mirrors ATen/native/transformers/attention.cpp (_scaled_dot_product_flash_attention_cpu and
// its backward): the fused attention op, one dispatcher op whose backward recomputes the
// attention weights from q, k and the row log-sum-exp instead of saving them: the meta functions
// and the CPU kernels of the Defs in ops/attention_defs.h (which declare what the kernels
// allocate, for the Meta kernels too). The loops are in kernels/cpu/flash_attention.cpp.
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
#include "ops/attention_defs.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/meta.h"
#include "ops/meta_copies.h"
#include "ops/op_utils.h"

namespace remat::ops {
namespace {

namespace cpu = kernels::cpu;

using Flash = structured__scaled_dot_product_flash_attention_for_cpu;
using FlashBackward = structured__scaled_dot_product_flash_attention_for_cpu_backward;

ScalarType accumulate_dtype(ScalarType t) { return t == kDouble ? kDouble : kFloat; }

void check_supported(const char* op, double dropout_p, const Tensor& attn_mask) {
  REMAT_CHECK(dropout_p == 0.0, op, ": dropout_p = ", dropout_p,
              " is not supported by remat's fused attention (only 0); use the math backend "
              "(sdpa_kernel(SDPBackend::MATH)) for attention dropout");
  REMAT_CHECK(!attn_mask.defined(), op, ": an explicit attn_mask (got shape ", attn_mask.sizes(),
              ") is not supported by remat's fused attention; use is_causal, or the math backend");
}

// The checks of both directions: q [B, H, L, E], k and v [B, H, S, E] on the CPU (or Meta).
AttentionGeometry flash_geometry(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p,
                                 const Tensor& attn_mask, std::optional<double> scale) {
  check_attention_operands(op, q, k, v);
  REMAT_CHECK(q.device().is_cpu() || q.is_meta(), op, ": expected CPU (or Meta) tensors, but got ",
              q.device().str());
  check_floating(op, q, "query");
  check_attention_layout(op, q, k, v);
  check_supported(op, dropout_p, attn_mask);
  AttentionGeometry g = attention_geometry(q, k, scale);
  g.lse_len = g.L;
  g.lse_dtype = accumulate_dtype(q.dtype());
  return g;
}

cpu::AttentionSizes sizes_of(const AttentionGeometry& g) { return {g.B, g.H, g.L, g.S, g.E}; }
cpu::HeadStrides head_strides(const Tensor& t) { return {t.strides()[0], t.strides()[1], t.strides()[2]}; }

// The CPU kernels (TORCH_IMPL_FUNC): the loops over the buffers the Defs declare.
void flash_attention_cpu(const char* op, const AttentionGeometry& g, const FlashForwardBuffers& b, const Tensor& query,
                         const Tensor&, const Tensor&, double, bool is_causal, const Tensor&, std::optional<double>) {
  REMAT_DISPATCH_FLOATING_TYPES(query.dtype(), op, [&] {
    using A = cpu::acc_t<scalar_t>;
    cpu::flash_attention_forward<scalar_t>(b.out.data_ptr<scalar_t>(), head_strides(b.out), b.lse.data_ptr<A>(),
                                           head_strides(b.lse), b.q.data_ptr<scalar_t>(), head_strides(b.q),
                                           b.k.data_ptr<scalar_t>(), head_strides(b.k), b.v.data_ptr<scalar_t>(),
                                           head_strides(b.v), sizes_of(g), is_causal, A(g.scale));
  });
}

void flash_attention_backward_cpu(const char* op, const AttentionGeometry& g, const FlashBackwardBuffers& b,
                                  const Tensor&, const Tensor& query, const Tensor&, const Tensor&, const Tensor&,
                                  const Tensor& logsumexp, double, bool is_causal, const Tensor&,
                                  std::optional<double>) {
  REMAT_DISPATCH_FLOATING_TYPES(query.dtype(), op, [&] {
    using A = cpu::acc_t<scalar_t>;
    cpu::flash_attention_backward<scalar_t>(
        b.dq.data_ptr<scalar_t>(), head_strides(b.dq), b.dk.data_ptr<scalar_t>(), head_strides(b.dk),
        b.dv.data_ptr<scalar_t>(), head_strides(b.dv), b.dout.data_ptr<scalar_t>(), head_strides(b.dout),
        b.q.data_ptr<scalar_t>(), head_strides(b.q), b.k.data_ptr<scalar_t>(), head_strides(b.k),
        b.v.data_ptr<scalar_t>(), head_strides(b.v), b.o.data_ptr<scalar_t>(), head_strides(b.o),
        logsumexp.data_ptr<A>(), head_strides(logsumexp), sizes_of(g), is_causal, A(g.scale));
  });
}

}  // namespace

AttentionGeometry flash_attention_meta(const char* op, const Tensor& query, const Tensor& key, const Tensor& value,
                                       double dropout_p, bool, const Tensor& attn_mask, std::optional<double> scale) {
  return flash_geometry(op, query, key, value, dropout_p, attn_mask, scale);
}

AttentionGeometry flash_attention_backward_meta(const char* op, const Tensor& grad_out, const Tensor& query,
                                                const Tensor& key, const Tensor& value, const Tensor& out,
                                                const Tensor& logsumexp, double dropout_p, bool,
                                                const Tensor& attn_mask, std::optional<double> scale) {
  AttentionGeometry g = flash_geometry(op, query, key, value, dropout_p, attn_mask, scale);
  check_attention_backward_operands(op, grad_out, query, out, logsumexp);
  const Shape lse_shape{g.B, g.H, g.L};
  REMAT_CHECK(logsumexp.sizes() == lse_shape && logsumexp.dtype() == g.lse_dtype, op,
              ": expected logsumexp of shape ", lse_shape, " and dtype ", toString(g.lse_dtype), ", but got ",
              logsumexp.sizes(), " ", toString(logsumexp.dtype()));
  return g;
}

AttentionGeometry attention_geometry(const Tensor& q, const Tensor& k, std::optional<double> scale) {
  AttentionGeometry g;
  g.B = q.size(0);
  g.H = q.size(1);
  g.L = q.size(2);
  g.S = k.size(2);
  g.E = q.size(3);
  g.scale = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(g.E));
  return g;
}

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

// The schemas from the Defs (ops/attention_defs.h); the CPU kernels and the Meta kernels, which
// allocate what the CPU kernels allocate (the outputs, the copies of a non-unit-stride input) by
// the Defs' buffers.
REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_flash_attention_def([&](auto def) { structured::define<typename decltype(def)::type>(m, {}); });
}
REMAT_LIBRARY_IMPL(aten, CPU, m) {
  using structured::CPUBackend;
  using structured::impl_buffered;
  impl_buffered<Flash, CPUBackend, CPUCopies, &flash_attention_cpu>(m);
  impl_buffered<FlashBackward, CPUBackend, CPUCopies, &flash_attention_backward_cpu>(m);
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  for_each_flash_attention_def(
      [&](auto def) { structured::impl_meta_buffered<typename decltype(def)::type, MetaCopies>(m); });
}

}  // namespace remat::ops
