// Mirrors torchgen's generated NativeMetaFunctions.h for Loss.cpp's cross_entropy (remat's fused
// cross_entropy and cross_entropy_backward: class-index targets, mean reduction): their Defs
// (ops/structured.h: name, schema, C++ signature, meta function), so that each exists once, and
// what their kernels allocate besides the output, declared once as templates over a backend's
// copies: the CPU and CUDA kernels (ops/loss.cpp, ops/cuda/loss.cpp) run them with CPUCopies and
// CUDACopies, the Meta kernels with MetaCopies (ops/meta_copies.h) for the backend a dry run
// counts like. So a dry run allocates what the backend allocates, in the same order.
#pragma once

#include <algorithm>

#include "kernels/cuda/workspace_sizes.h"
#include "ops/cuda_temporaries.h"
#include "ops/autocast.h"
#include "ops/autograd/derivative_rules.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

struct structured_cross_entropy {
  using Sig = Tensor(const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::cross_entropy";
  static constexpr const char* schema = "(Tensor self, Tensor target) -> Tensor";
  static constexpr auto meta = &cross_entropy_meta;
  static constexpr CastPolicy autocast_policy = CastPolicy::Float32;  // autocast: fp32
  // out = mean_i (logsumexp(self[i]) - self[i, target[i]])
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({arg(0, {0}), arg(1, {0})}, [](C c) -> G {
      return {if_needed(c, 0, [&] { return cross_entropy_backward(c.grad(), c.input(0), c.input(1)); }), Tensor()};
    });
  }
};
struct structured_cross_entropy_backward {
  using Sig = Tensor(const Tensor&, const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::cross_entropy_backward";
  static constexpr const char* schema = "(Tensor grad_output, Tensor self, Tensor target) -> Tensor";
  static constexpr auto meta = &cross_entropy_backward_meta;
  // the CPU kernel checks the targets' range even when there is no class (an empty gradient)
  static constexpr bool runs_on_empty = true;
  // out = (softmax(self) - onehot(target)) * grad_output / N
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({arg(0, {1}), arg(1, {0, 1}), arg(2, {0, 1})}, [](C c) -> G {
      Tensor x = c.input(1), t = c.input(2), gg = c.grad();
      return {if_needed(c, 0, [&] {
                // out is linear in grad_output: d/dg = sum(gg * out(g = 1))
                const InputMetadata& g = c.meta(0);
                Tensor one = ones(g.shape, TensorOptions().dtype(g.dtype).device(g.device));
                return reshape(sum(mul(gg, cross_entropy_backward(one, x, t))), g.shape);
              }),
              if_needed(c, 1, [&] {
                double n = static_cast<double>(x.sizes()[0]);
                return mul(_softmax_backward_data(gg, softmax(x, 1), 1), div(c.input(0), n));
              }),
              Tensor()};
    });
  }
};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_loss_def(const F& f) {
  f(structured::DefTag<structured_cross_entropy>{});
  f(structured::DefTag<structured_cross_entropy_backward>{});
}

// What cross_entropy's kernel reads besides its output (the loss), in the order it is made: the
// logits and targets contiguous; on CUDA a workspace (of at least 8 bytes) and the index-error
// flag. Freed in the reverse order.
struct CrossEntropyTemporaries {
  Tensor x, t, workspace, flag;
};
template <class Copies, DeviceType kBackend>
CrossEntropyTemporaries cross_entropy_temporaries(const Tensor& loss, const Tensor& logits, const Tensor& targets) {
  CrossEntropyTemporaries r;
  r.x = Copies::contiguous(logits);
  r.t = Copies::contiguous(targets);
  if constexpr (kBackend == kCUDA) {
    const size_t ws = kernels::cuda::cross_entropy_workspace_bytes(logits.dtype(), logits.sizes()[0]);
    r.workspace = Copies::workspace(std::max<size_t>(ws, 8), loss.device());
    r.flag = cuda_temporaries::index_error_flag(loss.device());
  }
  return r;
}

// The backward's: on CUDA, nothing for an empty gradient (no launch), else the upstream gradient
// in the accumulation dtype (the CPU kernel reads it in place, as a double); then the logits and
// targets contiguous (on the CPU even for an empty gradient: the targets are checked); on CUDA
// the index-error flag.
struct CrossEntropyBackwardTemporaries {
  Tensor g, x, t, flag;
};
template <class Copies, DeviceType kBackend>
CrossEntropyBackwardTemporaries cross_entropy_backward_temporaries(const Tensor& grad_logits,
                                                                   const Tensor& grad_output, const Tensor& logits,
                                                                   const Tensor& targets) {
  CrossEntropyBackwardTemporaries r;
  if constexpr (kBackend == kCUDA) {
    if (grad_logits.numel() == 0) return r;
    r.g = Copies::contiguous(Copies::cast(grad_output, logits.dtype() == kDouble ? kDouble : kFloat));
  }
  r.x = Copies::contiguous(logits);
  r.t = Copies::contiguous(targets);
  if constexpr (kBackend == kCUDA) r.flag = cuda_temporaries::index_error_flag(grad_logits.device());
  return r;
}

}  // namespace remat::ops
