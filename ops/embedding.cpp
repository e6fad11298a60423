// Mirrors ATen/native/Embedding.cpp: embedding (a row gather from a [V, D] table by Long indices
// of any shape) and embedding_dense_backward (a scatter-add of gradient rows into a zero [V, D]
// table). The loops are in kernels/cpu/embedding.h.
#include "kernels/cpu/embedding.h"

#include "engine/dispatch/library.h"
#include "ops/cpu_utils.h"
#include "ops/dispatch_dtype.h"
#include "ops/cuda_temporaries.h"
#include "ops/meta.h"
#include "ops/op_utils.h"

namespace remat::ops {

// Meta functions, shared by every backend (declared in ops/meta.h).

namespace {

void check_indices(const char* op, const Tensor& indices, const char* caller) {
  check_defined(op, indices, "indices");
  REMAT_CHECK(indices.dtype() == kLong, op,
              ": Expected tensor for argument #1 'indices' to have one of the following scalar types: Long; but got ",
              indices.toString(), " instead (while checking arguments for ", caller, ")");
}

}  // namespace

TensorMeta embedding_meta(const Tensor& weight, const Tensor& indices) {
  const char* op = "aten::embedding";
  check_defined(op, weight, "weight");
  check_indices(op, indices, "embedding");
  REMAT_CHECK(weight.dim() == 2, op, ": 'weight' must be 2-D, but got a ", weight.dim(), "-D tensor of shape ",
              weight.sizes());
  Device device = common_device(op, {&weight, &indices});
  Shape out = indices.sizes();
  out.push_back(weight.sizes()[1]);
  return {out, weight.dtype(), device};
}

TensorMeta embedding_backward_meta(const Tensor& grad_output, const Tensor& indices, int64_t num_weights) {
  const char* op = "aten::embedding_dense_backward";
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

Tensor embedding_cpu(const Tensor& weight, const Tensor& indices) {
  Tensor out = empty_from(embedding_meta(weight, indices));
  Tensor idx = contiguous_cpu(indices);
  check_index_range("aten::embedding", idx, weight.sizes()[0]);
  if (out.numel() == 0) return out;
  Tensor w = contiguous_cpu(weight);
  REMAT_DISPATCH_ALL_TYPES(weight.dtype(), "aten::embedding", [&] {
    cpu::embedding_forward(out.data_ptr<scalar_t>(), w.data_ptr<scalar_t>(), idx.data_ptr<int64_t>(), idx.numel(),
                           weight.sizes()[1]);
  });
  return out;
}

Tensor embedding_meta_kernel(const Tensor& weight, const Tensor& indices) {
  TensorMeta m = embedding_meta(weight, indices);
  m.device = Device{kMeta};
  Tensor out = empty_from(m);
  if (cuda_temporaries::imitating()) cuda_temporaries::embedding(weight, indices);
  return out;
}

Tensor embedding_dense_backward_cpu(const Tensor& grad_output, const Tensor& indices, int64_t num_weights) {
  TensorMeta m = embedding_backward_meta(grad_output, indices, num_weights);
  Tensor idx = contiguous_cpu(indices);
  check_index_range("aten::embedding_dense_backward", idx, num_weights);
  const ScalarType acc_dtype = m.dtype == kDouble ? kDouble : kFloat;
  // BFloat16/Half: accumulate repeated rows in float, round once at the end.
  Tensor acc = make_empty(m.sizes, acc_dtype, m.device);
  Tensor dy = contiguous_cpu(grad_output);
  const int64_t D = m.sizes[1];
  REMAT_DISPATCH_FLOATING_TYPES(m.dtype, "aten::embedding_dense_backward", [&] {
    using A = cpu::acc_t<scalar_t>;
    cpu::embedding_backward<scalar_t>(acc.data_ptr<A>(), dy.data_ptr<scalar_t>(), idx.data_ptr<int64_t>(), idx.numel(),
                                      num_weights, D);
  });
  return cast_cpu(acc, m.dtype);
}

Tensor embedding_dense_backward_meta(const Tensor& grad_output, const Tensor& indices, int64_t num_weights) {
  TensorMeta m = embedding_backward_meta(grad_output, indices, num_weights);
  m.device = Device{kMeta};
  Tensor out = empty_from(m);
  if (cuda_temporaries::imitating()) cuda_temporaries::embedding_backward(grad_output, indices, num_weights);
  return out;
}

}  // namespace

REMAT_LIBRARY_IMPL(aten, CPU, m) {
  m.impl("embedding", REMAT_FN(embedding_cpu));
  m.impl("embedding_dense_backward", REMAT_FN(embedding_dense_backward_cpu));
}
REMAT_LIBRARY_IMPL(aten, Meta, m) {
  m.impl("embedding", REMAT_FN(embedding_meta_kernel));
  m.impl("embedding_dense_backward", REMAT_FN(embedding_dense_backward_meta));
}

}  // namespace remat::ops
