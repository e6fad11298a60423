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

  // ---- in-place ----
  m.def("zero_(Tensor(a!) self) -> Tensor(a!)");
  m.def("fill_(Tensor(a!) self, float value) -> Tensor(a!)");
  m.def("copy_(Tensor(a!) self, Tensor src) -> Tensor(a!)");
  m.def("uniform_(Tensor(a!) self, float from=0., float to=1., *, Generator? generator=None) -> Tensor(a!)", {kSeeded});
  m.def("normal_(Tensor(a!) self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor(a!)", {kSeeded});
  // (the fused optimizers, _fused_adamw_ and _fused_sgd_: ops/fused_optimizer_defs.h)

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

  // ---- views (share storage and the version counter with self) ----
  m.def("view(Tensor(a) self, int[] size) -> Tensor(a)");
  m.def("reshape(Tensor(a) self, int[] shape) -> Tensor(a)");  // composite: view, else a copy
  m.def("transpose(Tensor(a) self, int dim0, int dim1) -> Tensor(a)");
  m.def("permute(Tensor(a) self, int[] dims) -> Tensor(a)");
  m.def("slice(Tensor(a) self, int dim=0, int start=0, int end=9223372036854775807, int step=1) -> Tensor(a)");
  m.def("unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]");
  m.def("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)");
  m.def("squeeze(Tensor(a) self, int dim) -> Tensor(a)");
  m.def("expand(Tensor(a) self, int[] size) -> Tensor(a)");
  m.def("detach(Tensor(a) self) -> Tensor(a)");
  m.def("as_strided(Tensor(a) self, int[] size, int[] stride, int? storage_offset=None) -> Tensor(a)");
  m.def("select(Tensor(a) self, int dim, int index) -> Tensor(a)");
  m.def("narrow(Tensor(a) self, int dim, int start, int length) -> Tensor(a)");  // composite: slice
  m.def("view_as(Tensor(a) self, Tensor other) -> Tensor(a)");                  // composite: view
  m.def("split_with_sizes(Tensor(a) self, int[] split_sizes, int dim=0) -> Tensor(a)[]");
  m.def("split(Tensor(a) self, int split_size, int dim=0) -> Tensor(a)[]");     // composite: split_with_sizes
  m.def("chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]");         // composite: split

  // ---- copies, conversions, constructors from a tensor ----
  m.def("clone(Tensor self) -> Tensor");
  m.def("contiguous(Tensor(a) self) -> Tensor(a)");  // composite: self, or a clone
  m.def("_to_copy(Tensor self, ScalarType? dtype=None, Device? device=None) -> Tensor");
  m.def("cat(Tensor[] tensors, int dim=0) -> Tensor");
  m.def("triu(Tensor self, int diagonal=0) -> Tensor");
  m.def("zeros_like(Tensor self) -> Tensor");
  m.def("ones_like(Tensor self) -> Tensor");
  m.def("slice_backward(Tensor grad_output, int[] input_sizes, int dim, int start, int end, int step) -> Tensor");
}

}  // namespace remat
