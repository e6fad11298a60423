// Mirrors aten/src/ATen/native/native_functions.yaml: the schema of every aten op remat has.
// The elementwise ops are defined in ops/pointwise.def (schemas included). Kernels are
// registered per backend in the ops/*.cpp files; derivatives in
// ops/autograd/derivatives.cpp; autocast rules in ops/autocast.cpp.
#include "engine/dispatch/library.h"

namespace remat {
namespace {
constexpr Tag kSeeded = Tag::nondeterministic_seeded;
}  // namespace

REMAT_LIBRARY_FRAGMENT(aten, m) {
  // ---- pointwise: the elementwise ops, maximum and addcmul_ too, are defined in ops/pointwise.def ----

  // ---- in-place (zero_, fill_, copy_: ops/copy_defs.h; uniform_, normal_: ops/factory_defs.h) ----
  // AdamW's whole update of one parameter (ops/fused_adam.cpp; optim::AdamW with fused(true))
  m.def("_fused_adamw_(Tensor(a!) self, Tensor(b!) exp_avg, Tensor(c!) exp_avg_sq, Tensor grad, *, float lr, "
        "float beta1, float beta2, float weight_decay, float eps, int step, bool maximize=False) -> Tensor(a!)");
  // SGD's whole update of one parameter (ops/fused_sgd.cpp; optim::SGD with fused(true)); the
  // momentum buffer is None when momentum is 0
  m.def("_fused_sgd_(Tensor(a!) self, Tensor grad, Tensor(b!)? momentum_buffer, *, float weight_decay, "
        "float momentum, float lr, float dampening, bool nesterov, bool maximize, bool is_first_step) -> Tensor(a!)");

  // ---- matrix products (mm, bmm, addmm: ops/linalg_defs.h) ----
  m.def("matmul(Tensor self, Tensor other) -> Tensor");                     // composite
  m.def("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor");  // composite

  // ---- reductions (sum, mean, amax: ops/reduction_defs.h) ----
  m.def("sum_to_size(Tensor self, int[] size) -> Tensor");  // composite

  // ---- normalisation, activations with state, losses (softmax: ops/softmax_defs.h; native_layer_norm,
  // _fused_rms_norm and their backward: ops/normalization_defs.h) ----
  m.def("layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> Tensor");  // composite
  m.def("rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float eps=1e-06) -> Tensor");  // composite
  m.def("dropout(Tensor input, float p, bool train, *, Generator? generator=None) -> Tensor");  // composite
  m.def("native_dropout(Tensor input, float p, *, Generator? generator=None) -> (Tensor, Tensor)", {kSeeded});
  m.def("native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor");
  m.def("embedding(Tensor weight, Tensor indices) -> Tensor");
  m.def("embedding_dense_backward(Tensor grad_output, Tensor indices, int num_weights) -> Tensor");
  m.def("cross_entropy(Tensor self, Tensor target) -> Tensor");
  m.def("cross_entropy_backward(Tensor grad_output, Tensor self, Tensor target) -> Tensor");
  m.def("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, bool is_causal=False, float dropout_p=0., *, Generator? generator=None) -> Tensor");  // composite
  // the fused attention (ops/flash_attention.cpp) the composite picks under sdpa_kernel(FLASH_ATTENTION)
  m.def("_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor output, Tensor logsumexp)");
  m.def("_scaled_dot_product_flash_attention_for_cpu_backward(Tensor grad_out, Tensor query, Tensor key, Tensor value, Tensor out, Tensor logsumexp, float dropout_p, bool is_causal, *, Tensor? attn_mask=None, float? scale=None) -> (Tensor grad_query, Tensor grad_key, Tensor grad_value)");
  // the fused attention on CUDA (ops/efficient_attention.cpp, ops/cuda/attention.cpp); remat's backward has no
  // bool[4] grad_input_mask (it computes the three input gradients; grad_attn_bias is undefined)
  m.def("_scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_bias, bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, *, float? scale=None) -> (Tensor output, Tensor log_sumexp, Tensor philox_seed, Tensor philox_offset)");
  m.def("_scaled_dot_product_efficient_attention_backward(Tensor grad_out_, Tensor query, Tensor key, Tensor value, Tensor attn_bias, Tensor out, Tensor logsumexp, Tensor philox_seed, Tensor philox_offset, float dropout_p, bool is_causal=False, *, float? scale=None) -> (Tensor, Tensor, Tensor, Tensor)");

  // ---- views (view, reshape, transpose, ..., split, chunk: ops/view_defs.h) ----

  // ---- copies, conversions, constructors from a tensor (zero_, fill_, copy_, clone, contiguous, _to_copy,
  // cat, triu, zeros_like, ones_like, slice_backward: ops/copy_defs.h) ----
}

}  // namespace remat
