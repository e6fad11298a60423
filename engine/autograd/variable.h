// Mirrors torch/csrc/autograd/variable.h: a tensor's autograd metadata (grad, grad_fn, the
// gradient accumulator of a leaf, requires_grad, output_nr, hooks), the metadata of a view
// (DifferentiableViewMeta: its base and how it was made) and the impl:: helpers that autograd
// kernels use to connect outputs to the graph.
#pragma once

#include <memory>
#include <string>
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
  bool is_view_ = false;                        // this is a DifferentiableViewMeta

  ~AutogradMeta() override = default;
  virtual bool requires_grad() const { return requires_grad_ || grad_fn_ != nullptr; }
};

// How a view was made, which decides whether it may be modified in place (PyTorch's NOTE
// [ View + Inplace detection ]): only DEFAULT views can be, by rebasing their base onto
// CopySlices.
enum class CreationMeta : uint8_t {
  DEFAULT,
  IN_CUSTOM_FUNCTION,  // returned by a custom Function (its backward would be bypassed)
  MULTI_OUTPUT_NODE,   // one of several views made by one op (unbind, split)
  NO_GRAD_MODE,        // made under no_grad: its history is ambiguous
};

// The autograd metadata of a view. All views of one tensor, views of views included, share one
// base (never itself a view) and one version counter (remat keeps it on the storage).
struct DifferentiableViewMeta : AutogradMeta {
  DifferentiableViewMeta(Tensor base, CreationMeta creation_meta, uint32_t version)
      : base_(std::move(base)), creation_meta_(creation_meta), attr_version_(version) {
    is_view_ = true;
  }
  // A view needs grad when its base does, e.g. after an in-place op on the base with an operand
  // that requires grad.
  bool requires_grad() const override { return requires_grad_ || grad_fn_ != nullptr || base_.requires_grad(); }

  Tensor base_;
  CreationMeta creation_meta_;
  // The version the view's grad_fn_ describes: once the base or another view of it is modified
  // in place, grad_fn_ is regenerated from the base (VariableHooks::grad_fn).
  uint32_t attr_version_;
};

namespace impl {

// The tensor's AutogradMeta, or nullptr if it never took part in autograd.
AutogradMeta* get_autograd_meta(const Tensor& t);
// Creates it on first use.
AutogradMeta* materialize_autograd_meta(const Tensor& t);

// Makes `t` output number `output_nr` of `fn` (sets grad_fn and output_nr).
void set_gradient_edge(const Tensor& t, Edge edge);
// The view metadata of t, or nullptr if t is not a view.
DifferentiableViewMeta* get_view_autograd_meta(const Tensor& t);
// Makes `view` (fresh, aliasing base's storage) a view of base's base (VariableTypeUtils.h
// as_view); a view of a view keeps the stricter creation meta. View kernels call this.
void as_view(const Tensor& base, const Tensor& view, CreationMeta creation_meta);
// Throws PyTorch's error for a view that must not be modified in place (its creation meta is
// not DEFAULT). indirect: the base or another view of it was modified, not this view.
void handle_view_on_rebase(DifferentiableViewMeta* view_meta, bool indirect = false);
// Before an in-place op on self that autograd records (VariableTypeUtils.h check_inplace; op
// names it in the message): a leaf that requires grad may not be modified, nor a view of one,
// nor a view handle_view_on_rebase refuses.
void check_inplace(const Tensor& self, const std::string& op);
// t's grad_fn (VariableHooks::grad_fn). For a view whose base or sibling view was modified in
// place since its grad_fn was set, first regenerates it: as_strided of the base, which records
// AsStridedBackward0.
std::shared_ptr<Node> grad_fn(const Tensor& t);
// The edge a gradient for `t` should flow along: (grad_fn, output_nr) for a non-leaf,
// (grad accumulator, 0) for a leaf that requires grad, an invalid edge otherwise.
Edge gradient_edge(const Tensor& t);
// The leaf's AccumulateGrad node (created and cached weakly on first use).
std::shared_ptr<Node> grad_accumulator(const Tensor& t);
std::shared_ptr<Node> try_get_grad_accumulator(const Tensor& t);

// Connects fn's forward outputs: each defined output becomes an input of fn.
void set_history(const Tensor& output, const std::shared_ptr<Node>& fn);
// In-place ops: the tensor's new history is fn (its old grad_fn becomes one of fn's edges).
// For a view, the base's history becomes CopySlices(fn) and the view's grad_fn is regenerated.
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
