// Mirrors ATen/native/Embedding.cpp: embedding (a row gather from a [V, D] table by Long indices
// of any shape) and embedding_dense_backward (a scatter-add of gradient rows into a zero [V, D]
// table). The loops are in kernels/cpu/embedding.h. The ops are structured (ops/embedding_defs.h):
// their meta functions, CPU kernels and Meta kernels are here.
#include "kernels/cpu/embedding.h"

#include "engine/dispatch/library.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/cuda_temporaries.h"
#include "ops/embedding_defs.h"
#include "ops/meta.h"
#include "ops/meta_copies.h"
#include "ops/op_utils.h"
#include "ops/structured.h"

namespace remat::ops {

// The Defs' meta functions (ops/embedding_defs.h), shared by every backend (declared in ops/meta.h).

namespace {

void check_indices(const char* op, const Tensor& indices, const char* caller) {
  check_defined(op, indices, "indices");
  REMAT_CHECK(indices.dtype() == kLong, op,
              ": Expected tensor for argument #1 'indices' to have one of the following scalar types: Long; but got ",
              indices.toString(), " instead (while checking arguments for ", caller, ")");
}

}  // namespace

TensorMeta embedding_meta(const char* op, const Tensor& weight, const Tensor& indices) {
  check_defined(op, weight, "weight");
  check_indices(op, indices, "embedding");
  REMAT_CHECK(weight.dim() == 2, op, ": 'weight' must be 2-D, but got a ", weight.dim(), "-D tensor of shape ",
              weight.sizes());
  Device device = common_device(op, {&weight, &indices});
  Shape out = indices.sizes();
  out.push_back(weight.sizes()[1]);
  return {out, weight.dtype(), device};
}

TensorMeta embedding_backward_meta(const char* op, const Tensor& grad_output, const Tensor& indices,
                                   int64_t num_weights) {
  check_defined(op, grad_output, "grad_output");
  check_indices(op, indices, "embedding_backward");
  check_floating(op, grad_output, "grad_output");
  Device device = common_device(op, {&grad_output, &indices});
  REMAT_CHECK(num_weights >= 0, op, ": num_weights must be non-negative, but got ", num_weights);
  bool matches = grad_output.dim() == indices.dim() + 1;
  for (int64_t d = 0; matches && d < indices.dim(); ++d) matches = grad_output.sizes()[d] == indices.sizes()[d];
  REMAT_CHECK(matches, op, ": grad_output of shape ", grad_output.sizes(),
              " must be the indices' shape followed by the embedding dim (indices of shape ", indices.sizes(), ")");
  return {{num_weights, grad_output.sizes()[grad_output.dim() - 1]}, grad_output.dtype(), device};
}

namespace {

namespace cpu = kernels::cpu;

// Every index in [0, num_rows); names the first offending index and the row count.
void check_index_range(const char* op, const Tensor& indices, int64_t num_rows) {
  const int64_t* p = indices.data_ptr<int64_t>();
  int64_t bad = cpu::first_index_out_of_range(p, indices.numel(), num_rows);
  REMAT_CHECK(bad < 0, op, ": index out of range in self: index ", bad < 0 ? 0 : p[bad], " (at position ", bad,
              ") is not in [0, ", num_rows, ") for a weight with ", num_rows, " rows");
}

// The Defs' CPU kernels (TORCH_IMPL_FUNC): the output has the meta function's geometry; they run
// on an empty output too (the Defs' runs_on_empty): the indices are checked first.
void embedding_cpu(const char* op, const Tensor& out, const Tensor& weight, const Tensor& indices) {
  const EmbeddingTemporaries r = embedding_temporaries<CPUCopies, kCPU>(out, weight, indices);
  check_index_range(op, r.idx, weight.sizes()[0]);
  if (out.numel() == 0) return;
  REMAT_DISPATCH_ALL_TYPES(weight.dtype(), op, [&] {
    cpu::embedding_forward(out.data_ptr<scalar_t>(), r.w.data_ptr<scalar_t>(), r.idx.data_ptr<int64_t>(),
                           r.idx.numel(), weight.sizes()[1]);
  });
}

// BFloat16/Half: repeated rows accumulate in float, rounded once into the output at the end.
void embedding_dense_backward_cpu(const char* op, const Tensor& grad_weight, const Tensor& grad_output,
                                  const Tensor& indices, int64_t num_weights) {
  const EmbeddingBackwardTemporaries r =
      embedding_backward_temporaries<CPUCopies, kCPU>(grad_weight, grad_output, indices, num_weights);
  check_index_range(op, r.idx, num_weights);
  REMAT_DISPATCH_FLOATING_TYPES(grad_weight.dtype(), op, [&] {
    using A = cpu::acc_t<scalar_t>;
    cpu::embedding_backward<scalar_t>(r.acc.data_ptr<A>(), r.dy.data_ptr<scalar_t>(), r.idx.data_ptr<int64_t>(),
                                      r.idx.numel(), num_weights, grad_weight.sizes()[1]);
  });
  if (!r.acc.is_same(grad_weight)) copy_into_cpu(grad_weight, r.acc);
}

// The Meta kernels' temporaries (structured::impl_meta): those of the backend the dry run counts
// like, from the templates its kernel runs.
void embedding_meta_temporaries(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  if (cuda_temporaries::imitating()) embedding_temporaries<MetaCopies, kCUDA>(out, weight, indices);
  else embedding_temporaries<MetaCopies, kCPU>(out, weight, indices);
}
void embedding_backward_meta_temporaries(const Tensor& grad_weight, const Tensor& grad_output, const Tensor& indices,
                                         int64_t num_weights) {
  if (cuda_temporaries::imitating())
    embedding_backward_temporaries<MetaCopies, kCUDA>(grad_weight, grad_output, indices, num_weights);
  else embedding_backward_temporaries<MetaCopies, kCPU>(grad_weight, grad_output, indices, num_weights);
}

}  // namespace

// The schemas, the CPU and the Meta kernels, from the Defs (ops/embedding_defs.h).
REMAT_LIBRARY_FRAGMENT(aten, m) {
  for_each_embedding_def([&](auto def) { structured::define<typename decltype(def)::type>(m, {}); });
}
REMAT_LIBRARY_IMPL(aten, CPU, m) {
  using structured::CPUBackend;
  using structured::impl;
  impl<structured_embedding, CPUBackend, &embedding_cpu>(m);
  impl<structured_embedding_dense_backward, CPUBackend, &embedding_dense_backward_cpu>(m);
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  structured::impl_meta<structured_embedding, &embedding_meta_temporaries>(m);
  structured::impl_meta<structured_embedding_dense_backward, &embedding_backward_meta_temporaries>(m);
}

}  // namespace remat::ops
