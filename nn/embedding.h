// Mirrors torch/nn/modules/sparse.py (nn.Embedding): a lookup table of rows.
#pragma once

#include "nn/module.h"

namespace remat::nn {

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator* generator = nullptr, TensorOptions options = {});
  Tensor forward(const Tensor& indices) const;  // Long indices of any shape -> [..., dim]
  Tensor operator()(const Tensor& indices) const { return forward(indices); }

  Tensor& weight;  // [num_embeddings, embedding_dim], N(0, 1) as PyTorch initialises it
  int64_t num_embeddings, embedding_dim;
};

}  // namespace remat::nn
