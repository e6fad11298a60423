// Mirrors torchgen's generated NativeMetaFunctions.h for the fused attention ops of
// ATen/native/transformers (_scaled_dot_product_flash_attention_for_cpu and its backward,
// _scaled_dot_product_efficient_attention and its backward): their Defs (ops/structured.h: the
// multi-output form, name, schema, C++ signature, meta function) and what their kernels allocate,
// declared once as templates over a backend's copies (CPUCopies, CUDACopies, MetaCopies), so that
// each backend's kernel and the Meta kernel allocate the same by construction. The kernels are in
// ops/flash_attention.cpp (CPU), ops/cuda/attention.cpp (CUDA); scaled_dot_product_attention, the
// composite that picks one, is in ops/attention.cpp.
//
// The outputs' layouts are PyTorch's: output and the gradients [B, H, rows, E] laid out as
// [B, rows, H, E]; the flash op's logsumexp [B, H, L] laid out as [B, L, H].
#pragma once

#include <optional>
#include <tuple>

#include "ops/autograd/derivative_rules.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

// [B, H, rows, E] laid out as [B, rows, H, E].
inline Tensor empty_heads_interleaved(const AttentionGeometry& g, int64_t rows, ScalarType dtype, Device device) {
  return make_empty_strided({g.B, g.H, rows, g.E}, {rows * g.H * g.E, g.E, g.H * g.E, 1}, dtype, device);
}
// An operand as the flash kernels read it: itself when its head dim has stride 1, else a copy.
template <class Copies>
Tensor unit_stride_head_dim(const Tensor& t) {
  return t.size(-1) <= 1 || t.strides().back() == 1 ? t : Copies::contiguous(t);
}

// ---- the flash op (CPU) ----

struct FlashForwardBuffers {
  Tensor q, k, v;   // the operands as the kernel reads them (made first)
  Tensor out, lse;  // the outputs
};
struct structured__scaled_dot_product_flash_attention_for_cpu {
  using Sig = std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, double, bool, const Tensor&,
                                         std::optional<double>);
  static constexpr const char* name = "aten::_scaled_dot_product_flash_attention_for_cpu";
  static constexpr const char* schema =
      "(Tensor query, Tensor key, Tensor value, float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, "
      "float? scale=None) -> (Tensor output, Tensor logsumexp)";
  static constexpr auto meta = &flash_attention_meta;
  // output, logsumexp = _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p, is_causal,
  //                                                               attn_mask, scale)
  // as derivatives.yaml: the three gradients come from one backward call that reads query, key,
  // value, output and logsumexp (it recomputes the attention weights); logsumexp gets none. Its
  // backward op has no derivative (create_graph through it fails in the double backward).
  static autograd::Derivative derivative() {
    using namespace autograd;
    return with_non_differentiable_outputs(
        rule({arg(0, {0, 1, 2}), arg(1, {0, 1, 2}), arg(2, {0, 1, 2}), result(0, {0, 1, 2}), result(1, {0, 1, 2})},
             [](C c) -> G {
               if (!c.grad(0).defined()) return G(4);
               std::optional<double> scale;
               if (!c.is_none(6)) scale = c.scalar(6);
               auto [dq, dk, dv] = _scaled_dot_product_flash_attention_for_cpu_backward(
                   c.grad(0), c.input(0), c.input(1), c.input(2), c.result(0), c.result(1), c.scalar(3), c.flag(4),
                   Tensor(), scale);
               return {dq, dk, dv, Tensor()};
             }),
        {1});
  }
  template <class Copies, class... Rest>
  static FlashForwardBuffers buffers(const AttentionGeometry& g, const Tensor& query, const Tensor& key,
                                     const Tensor& value, const Rest&...) {
    FlashForwardBuffers b;
    b.q = unit_stride_head_dim<Copies>(query);
    b.k = unit_stride_head_dim<Copies>(key);
    b.v = unit_stride_head_dim<Copies>(value);
    b.out = empty_heads_interleaved(g, g.L, query.dtype(), query.device());
    b.lse = make_empty_strided({g.B, g.H, g.L}, {g.L * g.H, 1, g.H}, g.lse_dtype, query.device());
    return b;
  }
  static std::tuple<Tensor, Tensor> outputs(const FlashForwardBuffers& b) { return {b.out, b.lse}; }
};

struct FlashBackwardBuffers {
  Tensor dout, o, q, k, v;  // the operands as the kernel reads them (made first)
  Tensor dq, dk, dv;        // the outputs
};
struct structured__scaled_dot_product_flash_attention_for_cpu_backward {
  using Sig = std::tuple<Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                 const Tensor&, const Tensor&, double, bool, const Tensor&,
                                                 std::optional<double>);
  static constexpr const char* name = "aten::_scaled_dot_product_flash_attention_for_cpu_backward";
  static constexpr const char* schema =
      "(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, float dropout_p, "
      "bool is_causal, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor grad_query, Tensor grad_key, "
      "Tensor grad_value)";
  static constexpr auto meta = &flash_attention_backward_meta;
  template <class Copies, class... Rest>
  static FlashBackwardBuffers buffers(const AttentionGeometry& g, const Tensor& grad_out, const Tensor& query,
                                      const Tensor& key, const Tensor& value, const Tensor& out, const Rest&...) {
    FlashBackwardBuffers b;
    b.dout = unit_stride_head_dim<Copies>(grad_out);
    b.o = unit_stride_head_dim<Copies>(out);
    b.q = unit_stride_head_dim<Copies>(query);
    b.k = unit_stride_head_dim<Copies>(key);
    b.v = unit_stride_head_dim<Copies>(value);
    b.dq = empty_heads_interleaved(g, g.L, query.dtype(), query.device());
    b.dk = empty_heads_interleaved(g, g.S, query.dtype(), query.device());
    b.dv = empty_heads_interleaved(g, g.S, query.dtype(), query.device());
    return b;
  }
  static std::tuple<Tensor, Tensor, Tensor> outputs(const FlashBackwardBuffers& b) { return {b.dq, b.dk, b.dv}; }
};

// ---- the efficient op (CUDA; its kernels read the operands as given: nothing is copied) ----

struct EfficientForwardBuffers {
  Tensor out, lse, philox_seed, philox_offset;  // the outputs
};
struct structured__scaled_dot_product_efficient_attention {
  using Sig = std::tuple<Tensor, Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                         bool, double, bool, std::optional<double>);
  static constexpr const char* name = "aten::_scaled_dot_product_efficient_attention";
  static constexpr const char* schema =
      "(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, bool compute_log_sumexp, float dropout_p=0., "
      "bool is_causal=False, *, float? scale=None) -> (Tensor output, Tensor log_sumexp, Tensor philox_seed, "
      "Tensor philox_offset)";
  static constexpr auto meta = &efficient_attention_meta;
  // output, log_sumexp, philox_seed, philox_offset = _scaled_dot_product_efficient_attention(
  //     query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, scale)
  // as derivatives.yaml (output_differentiability: [True, False, False, False]): one backward call
  // gives the three gradients from query, key, value, output, log_sumexp and the philox state;
  // attn_bias (always undefined here) gets none.
  static autograd::Derivative derivative() {
    using namespace autograd;
    return with_non_differentiable_outputs(
        rule({arg(0, {0, 1, 2}), arg(1, {0, 1, 2}), arg(2, {0, 1, 2}), result(0, {0, 1, 2}), result(1, {0, 1, 2}),
              result(2, {0, 1, 2}), result(3, {0, 1, 2})},
             [](C c) -> G {
               if (!c.grad(0).defined()) return G(4);
               std::optional<double> scale;
               if (!c.is_none(7)) scale = c.scalar(7);
               auto [dq, dk, dv, dbias] = _scaled_dot_product_efficient_attention_backward(
                   c.grad(0), c.input(0), c.input(1), c.input(2), Tensor(), c.result(0), c.result(1), c.result(2),
                   c.result(3), c.scalar(5), c.flag(6), scale);
               return {dq, dk, dv, dbias};
             }),
        {1, 2, 3});
  }
  template <class Copies, class... Rest>
  static EfficientForwardBuffers buffers(const AttentionGeometry& g, const Tensor& query, const Tensor&,
                                         const Tensor&, const Tensor&, bool compute_log_sumexp, const Rest&...) {
    EfficientForwardBuffers b;
    b.out = empty_heads_interleaved(g, g.L, query.dtype(), query.device());
    b.lse = make_empty({g.B, g.H, compute_log_sumexp ? g.lse_len : 0}, g.lse_dtype, query.device());
    b.philox_seed = zero_philox_cpu();
    b.philox_offset = zero_philox_cpu();
    return b;
  }
  static std::tuple<Tensor, Tensor, Tensor, Tensor> outputs(const EfficientForwardBuffers& b) {
    return {b.out, b.lse, b.philox_seed, b.philox_offset};
  }
};

// No grad_input_mask (remat's schemas have no bool[]): the three input gradients always, and an
// undefined grad_attn_bias.
struct EfficientBackwardBuffers {
  Tensor dq, dk, dv;  // the outputs
};
struct structured__scaled_dot_product_efficient_attention_backward {
  using Sig = std::tuple<Tensor, Tensor, Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                         const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                                         const Tensor&, double, bool, std::optional<double>);
  static constexpr const char* name = "aten::_scaled_dot_product_efficient_attention_backward";
  static constexpr const char* schema =
      "(Tensor grad_out_, Tensor query, Tensor key, Tensor value, Tensor attn_bias, Tensor out, Tensor logsumexp, "
      "Tensor philox_seed, Tensor philox_offset, float dropout_p, bool is_causal=False, *, float? scale=None) -> "
      "(Tensor, Tensor, Tensor, Tensor)";
  static constexpr auto meta = &efficient_attention_backward_meta;
  template <class Copies, class... Rest>
  static EfficientBackwardBuffers buffers(const AttentionGeometry& g, const Tensor&, const Tensor& query,
                                          const Rest&...) {
    EfficientBackwardBuffers b;
    b.dq = empty_heads_interleaved(g, g.L, query.dtype(), query.device());
    b.dk = empty_heads_interleaved(g, g.S, query.dtype(), query.device());
    b.dv = empty_heads_interleaved(g, g.S, query.dtype(), query.device());
    return b;
  }
  static std::tuple<Tensor, Tensor, Tensor, Tensor> outputs(const EfficientBackwardBuffers& b) {
    return {b.dq, b.dk, b.dv, Tensor()};
  }
};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h): the flash op's
// (CPU and Meta kernels), the efficient op's (CUDA and Meta kernels).
template <class F>
void for_each_flash_attention_def(const F& f) {
  f(structured::DefTag<structured__scaled_dot_product_flash_attention_for_cpu>{});
  f(structured::DefTag<structured__scaled_dot_product_flash_attention_for_cpu_backward>{});
}
template <class F>
void for_each_efficient_attention_def(const F& f) {
  f(structured::DefTag<structured__scaled_dot_product_efficient_attention>{});
  f(structured::DefTag<structured__scaled_dot_product_efficient_attention_backward>{});
}

}  // namespace remat::ops
