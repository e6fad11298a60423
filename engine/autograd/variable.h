// Mirrors torch/csrc/autograd/variable.h: a tensor's autograd metadata (grad, grad_fn, the
// gradient accumulator of a leaf, requires_grad, output_nr, hooks) and the impl:: helpers
// that autograd kernels use to connect outputs to the graph.
#pragma once

#include <memory>
#include <vector>

#include "engine/autograd/edge.h"
#include "engine/autograd/node.h"
#include "engine/core/tensor.h"

namespace remat::autograd {

struct AutogradMeta : AutogradMetaInterface {
  Tensor grad_;
  std::shared_ptr<Node> grad_fn_;               // non-leaf: the node that made this tensor
  std::weak_ptr<Node> grad_accumulator_;        // leaf: created lazily, held weakly (no cycle)
  std::vector<TensorPreHook> leaf_hooks_;       // leaf hooks, run by AccumulateGrad / captures
  bool requires_grad_ = false;                  // set by requires_grad_() on leaves
  std::shared_ptr<Tensor> retained_grad_;      // non-leaf after retain_grad(): filled by a hook
  uint32_t output_nr_ = 0;
  // A view's storage version when it got its history: an in-place op on its base since then
  // makes that history stale (PyTorch replays the view; remat reports it, see gradient_edge).
  uint32_t version_at_history_ = 0;

  bool requires_grad() const { return requires_grad_ || grad_fn_ != nullptr; }
};

namespace impl {

// The tensor's AutogradMeta, or nullptr if it never took part in autograd.
AutogradMeta* get_autograd_meta(const Tensor& t);
// Creates it on first use.
AutogradMeta* materialize_autograd_meta(const Tensor& t);

// Makes `t` output number `output_nr` of `fn` (sets grad_fn and output_nr).
void set_gradient_edge(const Tensor& t, Edge edge);
// The edge a gradient for `t` should flow along: (grad_fn, output_nr) for a non-leaf,
// (grad accumulator, 0) for a leaf that requires grad, an invalid edge otherwise.
Edge gradient_edge(const Tensor& t);
// The leaf's AccumulateGrad node (created and cached weakly on first use).
std::shared_ptr<Node> grad_accumulator(const Tensor& t);
std::shared_ptr<Node> try_get_grad_accumulator(const Tensor& t);

// Connects fn's forward outputs: each defined output becomes an input of fn.
void set_history(const Tensor& output, const std::shared_ptr<Node>& fn);
// In-place ops: the tensor's new history is fn (its old grad_fn becomes one of fn's edges).
void rebase_history(const Tensor& t, const std::shared_ptr<Node>& fn);

// Gradient edges of the given tensors (invalid edges for ones that need no grad).
edge_list collect_next_edges(const std::vector<Tensor>& tensors);
bool any_requires_grad(const std::vector<Tensor>& tensors);

// Updates the Autograd dispatch key of t to match requires_grad().
void sync_autograd_key(const Tensor& t);

}  // namespace impl

// A new tensor sharing t's storage and version counter with no autograd history
// (Tensor::detach without dispatch; what SavedVariable stores for outputs).
Tensor tensor_data(const Tensor& t);

}  // namespace remat::autograd
