// Mirrors torch/nn/modules/sparse.py.
#include "nn/embedding.h"

#include "nn/init.h"
#include "ops/functions.h"

namespace remat::nn {

namespace {
// Checked before anything is allocated (empty() would fail first, with a less helpful message).
Shape table_shape(int64_t num, int64_t dim) {
  REMAT_CHECK(num > 0 && dim > 0, "Embedding: sizes must be positive (got ", num, ", ", dim, ")");
  return {num, dim};
}
}  // namespace

Embedding::Embedding(int64_t num, int64_t dim, Generator* generator, TensorOptions options)
    : Module("Embedding"),
      weight(register_parameter("weight", empty(table_shape(num, dim), options.requires_grad(false)))),
      num_embeddings(num),
      embedding_dim(dim) {
  init::normal_(weight, 0.0, 1.0, generator);
}

Tensor Embedding::forward(const Tensor& indices) const {
  auto s = enter();
  return embedding(weight, indices);
}

}  // namespace remat::nn
