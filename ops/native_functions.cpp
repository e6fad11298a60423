// Mirrors aten/src/ATen/native/native_functions.yaml: the schema of every aten op remat has.
// The elementwise ops are defined in ops/pointwise.def (schemas included). Kernels are
// registered per backend in the ops/*.cpp files; a Def's derivative and autocast policy are in
// the Def (ops/*_defs.h); the composites' autocast rules in ops/autocast.cpp.
#include "engine/dispatch/library.h"

namespace remat {
namespace {
constexpr Tag kSeeded = Tag::nondeterministic_seeded;
}  // namespace

REMAT_LIBRARY_FRAGMENT(aten, m) {
  // ---- pointwise: the elementwise ops, maximum and addcmul_ too, are defined in ops/pointwise.def ----

  // ---- in-place (zero_, fill_, copy_: ops/copy_defs.h; uniform_, normal_: ops/factory_defs.h; the fused
  // optimizers, _fused_adamw_ and _fused_sgd_: ops/fused_optimizer_defs.h) ----

  // ---- matrix products (mm, bmm, addmm: ops/linalg_defs.h) ----
  m.def("matmul(Tensor self, Tensor other) -> Tensor");                     // composite
  m.def("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor");  // composite

  // ---- reductions (sum, mean, amax: ops/reduction_defs.h) ----
  m.def("sum_to_size(Tensor self, int[] size) -> Tensor");  // composite

  // ---- normalisation, activations with state, losses (softmax: ops/softmax_defs.h; native_layer_norm,
  // _fused_rms_norm and their backward: ops/normalization_defs.h; native_dropout and its backward:
  // ops/dropout_defs.h; embedding, embedding_dense_backward: ops/embedding_defs.h; cross_entropy and
  // its backward: ops/loss_defs.h) ----
  m.def("layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> Tensor");  // composite
  m.def("rms_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, float eps=1e-06) -> Tensor");  // composite
  m.def("dropout(Tensor input, float p, bool train, *, Generator? generator=None) -> Tensor");  // composite
  m.def("scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, bool is_causal=False, float dropout_p=0., *, Generator? generator=None) -> Tensor");  // composite
  // (the fused attention the composite picks under sdpa_kernel(FLASH_ATTENTION), the CPU's flash op, CUDA's
  // efficient op and their backward: ops/attention_defs.h)

  // ---- views (view, reshape, transpose, ..., split, chunk: ops/view_defs.h) ----

  // ---- copies, conversions, constructors from a tensor (zero_, fill_, copy_, clone, contiguous, _to_copy,
  // cat, triu, zeros_like, ones_like, slice_backward: ops/copy_defs.h) ----
}

}  // namespace remat
