// Mirrors torchgen's generated NativeMetaFunctions.h for Embedding.cpp's ops (embedding,
// embedding_dense_backward): their Defs (ops/structured.h: name, schema, C++ signature, meta
// function), so that each exists once, and what their kernels allocate besides the output,
// declared once as templates over a backend's copies: the CPU and CUDA kernels
// (ops/embedding.cpp, ops/cuda/embedding.cpp) run them with CPUCopies and CUDACopies, the Meta
// kernels with MetaCopies (ops/meta_copies.h) for the backend a dry run counts like. So a dry run
// allocates what the backend allocates, in the same order.
#pragma once

#include "kernels/cuda/workspace_sizes.h"
#include "ops/cuda_temporaries.h"
#include "ops/autograd/derivative_rules.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

// Both run on empty outputs too: every backend checks the indices' range whatever the output's size.
struct structured_embedding {
  using Sig = Tensor(const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::embedding";
  static constexpr const char* schema = "(Tensor weight, Tensor indices) -> Tensor";
  static constexpr auto meta = &embedding_meta;
  static constexpr bool runs_on_empty = true;
  // out = weight[indices]
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({arg(1, {0})}, [](C c) -> G {
      return {if_needed(c, 0, [&] { return embedding_dense_backward(c.grad(), c.input(1), c.meta(0).shape[0]); }),
              Tensor()};
    });
  }
};
struct structured_embedding_dense_backward {
  using Sig = Tensor(const Tensor&, const Tensor&, int64_t);
  static constexpr const char* name = "aten::embedding_dense_backward";
  static constexpr const char* schema = "(Tensor grad_output, Tensor indices, int num_weights) -> Tensor";
  static constexpr auto meta = &embedding_backward_meta;
  static constexpr bool runs_on_empty = true;
  // out = zeros(num_weights, D); out[indices[i]] += grad_output[i]
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({arg(1, {0})}, [](C c) -> G {
      return {if_needed(c, 0, [&] { return embedding(c.grad(), c.input(1)); }), Tensor()};
    });
  }
};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_embedding_def(const F& f) {
  f(structured::DefTag<structured_embedding>{});
  f(structured::DefTag<structured_embedding_dense_backward>{});
}

// What embedding's kernel reads besides its output, in the order it is made: the indices
// contiguous; unless there is nothing to gather (the CPU: an empty output, once the indices are
// checked; CUDA: no index), the weight contiguous and, on CUDA, the index-error flag. Freed in the
// reverse order.
struct EmbeddingTemporaries {
  Tensor idx, w, flag;
};
template <class Copies, DeviceType kBackend>
EmbeddingTemporaries embedding_temporaries(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  EmbeddingTemporaries r;
  r.idx = Copies::contiguous(indices);
  if (kBackend == kCUDA ? r.idx.numel() == 0 : out.numel() == 0) return r;
  r.w = Copies::contiguous(weight);
  if constexpr (kBackend == kCUDA) r.flag = cuda_temporaries::index_error_flag(out.device());
  return r;
}

// The backward's: the indices contiguous; on the CPU, the accumulator of repeated rows (the
// output itself, unless 16-bit: then a Float table, rounded into the output at the end); the
// upstream gradient contiguous; on CUDA the workspace and the index-error flag.
struct EmbeddingBackwardTemporaries {
  Tensor idx, acc, dy, workspace, flag;
};
template <class Copies, DeviceType kBackend>
EmbeddingBackwardTemporaries embedding_backward_temporaries(const Tensor& grad_weight, const Tensor& grad_output,
                                                            const Tensor& indices, int64_t num_weights) {
  EmbeddingBackwardTemporaries r;
  const Device device = grad_weight.device();
  r.idx = Copies::contiguous(indices);
  if constexpr (kBackend == kCPU) {
    const ScalarType acc_dtype = grad_weight.dtype() == kDouble ? kDouble : kFloat;
    r.acc = grad_weight.dtype() == acc_dtype ? grad_weight : make_empty(grad_weight.sizes(), acc_dtype, device);
  }
  r.dy = Copies::contiguous(grad_output);
  if constexpr (kBackend == kCUDA) {
    r.workspace =
        Copies::workspace(kernels::cuda::embedding_backward_workspace_bytes(indices.numel(), num_weights), device);
    r.flag = cuda_temporaries::index_error_flag(device);
  }
  return r;
}

}  // namespace remat::ops
