// Mirrors torch/csrc/autograd/variable.cpp (impl:: helpers, rebase_history, VariableHooks::grad_fn,
// handle_view_on_rebase), VariableTypeUtils.h (as_view) and the autograd methods of Tensor
// (torch/csrc/autograd/VariableTypeManual.cpp, python_variable.cpp).
#include "engine/autograd/variable.h"

#include "engine/autograd/accumulate_grad.h"
#include "engine/autograd/autograd.h"
#include "engine/autograd/functions/tensor.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/ops_by_name.h"
#include "engine/dispatch/local_dispatch_key_set.h"

namespace remat::autograd {

namespace impl {

AutogradMeta* get_autograd_meta(const Tensor& t) {
  return static_cast<AutogradMeta*>(t.unsafeGetTensorImpl()->autograd_meta());
}

AutogradMeta* materialize_autograd_meta(const Tensor& t) {
  TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->autograd_meta() == nullptr) impl->set_autograd_meta(std::make_unique<AutogradMeta>());
  return static_cast<AutogradMeta*>(impl->autograd_meta());
}

void sync_autograd_key(const Tensor& t) {
  AutogradMeta* m = get_autograd_meta(t);
  // A view keeps the key: its base may come to require grad (an in-place op on the base with an
  // operand that requires grad), and the view is not told.
  t.unsafeGetTensorImpl()->set_autograd_key(m != nullptr && (m->is_view_ || m->requires_grad()));
}

void set_gradient_edge(const Tensor& t, Edge edge) {
  AutogradMeta* m = materialize_autograd_meta(t);
  m->grad_fn_ = std::move(edge.function);
  m->output_nr_ = edge.input_nr;
  // A view's new grad_fn describes its current version: not regenerated until that changes.
  if (m->is_view_) static_cast<DifferentiableViewMeta*>(m)->attr_version_ = t.impl()->version();
  sync_autograd_key(t);
}

DifferentiableViewMeta* get_view_autograd_meta(const Tensor& t) {
  AutogradMeta* m = t.defined() ? get_autograd_meta(t) : nullptr;
  return m != nullptr && m->is_view_ ? static_cast<DifferentiableViewMeta*>(m) : nullptr;
}

void as_view(const Tensor& base, const Tensor& view, CreationMeta creation_meta) {
  if (!isDifferentiableType(view.dtype())) return;  // never requires grad: nothing to track
  REMAT_INTERNAL_ASSERT(get_autograd_meta(view) == nullptr, "as_view: the view already has autograd metadata");
  Tensor root = base;
  if (DifferentiableViewMeta* base_meta = get_view_autograd_meta(base)) {
    root = base_meta->base_;  // a view of a view is a view of the same base
    if (creation_meta == CreationMeta::DEFAULT) creation_meta = base_meta->creation_meta_;
  }
  view.unsafeGetTensorImpl()->set_autograd_meta(
      std::make_unique<DifferentiableViewMeta>(std::move(root), creation_meta, view.impl()->version()));
  sync_autograd_key(view);
}

void handle_view_on_rebase(DifferentiableViewMeta* view_meta, bool indirect) {
  const CreationMeta creation_meta = view_meta->creation_meta_;
  if (creation_meta == CreationMeta::DEFAULT) return;
  const Node* fn = view_meta->grad_fn_.get();
  const std::string modified = indirect ? "its base or another view of its base has been" : "is being";
  std::string msg;
  if (creation_meta == CreationMeta::NO_GRAD_MODE || fn == nullptr) {
    std::string prefix = fn != nullptr ? "Output " + std::to_string(view_meta->output_nr_) + " of " + fn->name() +
                                             " is a view of a view which was created in"
                                       : std::string("A view was created in");
    msg = prefix + " no_grad mode and " + modified + " modified inplace with grad mode enabled.";
  } else {
    msg = "Output " + std::to_string(view_meta->output_nr_) + " of " + fn->name() + " is a view and " + modified +
          " modified inplace.";
  }
  switch (creation_meta) {
    case CreationMeta::MULTI_OUTPUT_NODE:
      msg += " This view is the output of a function that returns multiple views. Such functions do not allow the "
             "output views to be modified inplace. You should replace the inplace operation by an out-of-place one.";
      break;
    case CreationMeta::NO_GRAD_MODE:
      msg += " Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by "
             "moving both the view and the inplace either both inside the no_grad block (if you don't want the "
             "inplace to be tracked) or both outside (if you want the inplace to be tracked).";
      break;
    case CreationMeta::IN_CUSTOM_FUNCTION:
      msg += " This view was created inside a custom Function (or because an input was returned as-is) and the "
             "autograd logic to handle view+inplace would override the custom backward associated with the custom "
             "Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the "
             "output of the custom Function.";
      break;
    case CreationMeta::DEFAULT:
      break;
  }
  throw Error(msg);
}

void check_inplace(const Tensor& self, const std::string& op) {
  if (DifferentiableViewMeta* view = get_view_autograd_meta(self)) {
    handle_view_on_rebase(view);
    REMAT_CHECK(!(self.requires_grad() && view->base_.is_leaf()),
                "a view of a leaf Variable that requires grad is being used in an in-place operation. (", op,
                " on a view of shape ", self.sizes(), " of a leaf of shape ", view->base_.sizes(), ")");
  }
  REMAT_CHECK(!(self.is_leaf() && self.requires_grad()),
              "a leaf Variable that requires grad is being used in an in-place operation. (", op,
              " on a tensor of shape ", self.sizes(), ")");
}

namespace {

// as_strided(base) with the view's geometry, recorded by autograd: its AsStridedBackward0 is the
// view's new grad_fn. Dispatch modes do not see it (PyTorch builds the node without running an
// op), and it records even when reached from backward (grad mode off) or below Autograd.
std::shared_ptr<Node> as_strided_grad_fn(const Tensor& base, const Tensor& view) {
  LocalDispatchKeySetGuard restore;
  LocalDispatchKeySet& keys = tls_local_dispatch_key_set();
  keys.excluded = keys.excluded.add(DispatchKey::Python).remove(DispatchKey::Autograd);
  AutoGradMode grad_mode(true);
  Tensor replayed = ops_by_name::as_strided(base, view.sizes(), view.strides(), view.storage_offset());
  AutogradMeta* m = get_autograd_meta(replayed);
  return m != nullptr ? m->grad_fn_ : nullptr;
}

}  // namespace

std::shared_ptr<Node> grad_fn(const Tensor& t) {
  AutogradMeta* m = t.defined() ? get_autograd_meta(t) : nullptr;
  if (m == nullptr) return nullptr;
  if (!m->is_view_) return m->grad_fn_;
  auto* view_meta = static_cast<DifferentiableViewMeta*>(m);
  if (!view_meta->grad_fn_ && !view_meta->base_.requires_grad()) return nullptr;
  const uint32_t version = t.impl()->version();
  if (view_meta->attr_version_ != version) {
    // The base or another view of it was modified in place: this view's values now come from
    // the base's new history (Note [View + Inplace update for view tensor]).
    handle_view_on_rebase(view_meta, /*indirect=*/true);
    view_meta->grad_fn_ = as_strided_grad_fn(view_meta->base_, t);
    view_meta->output_nr_ = 0;
    view_meta->attr_version_ = version;
  }
  return view_meta->grad_fn_;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = t.defined() ? get_autograd_meta(t) : nullptr;
  if (m == nullptr) return Edge();
  if (std::shared_ptr<Node> fn = grad_fn(t)) return Edge(std::move(fn), m->output_nr_);
  if (m->requires_grad_) return Edge(grad_accumulator(t), 0);
  return Edge();
}

std::shared_ptr<Node> try_get_grad_accumulator(const Tensor& t) {
  AutogradMeta* m = get_autograd_meta(t);
  return m ? m->grad_accumulator_.lock() : nullptr;
}

std::shared_ptr<Node> grad_accumulator(const Tensor& t) {
  AutogradMeta* m = get_autograd_meta(t);
  if (m == nullptr || !m->requires_grad_) return nullptr;
  if (auto acc = m->grad_accumulator_.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(t);
  m->grad_accumulator_ = acc;
  return acc;
}

void set_history(const Tensor& output, const std::shared_ptr<Node>& fn) {
  if (!output.defined()) return;
  uint32_t nr = fn->add_input_metadata(output);
  set_gradient_edge(output, Edge(fn, nr));
}

void rebase_history(const Tensor& t, const std::shared_ptr<Node>& fn) {
  // fn already holds t's old gradient edge among its next edges (collected before the op).
  uint32_t nr = fn->add_input_metadata(t);
  DifferentiableViewMeta* view_meta = get_view_autograd_meta(t);
  if (view_meta == nullptr) {
    set_gradient_edge(t, Edge(fn, nr));
    return;
  }
  // Note [View + Inplace update for base tensor]: the base's history becomes CopySlices, which
  // runs fn on the view's slice of the base's gradient.
  check_inplace(t, fn->name());  // autograd kernels have done so before the op; custom Functions not
  const Tensor& base = view_meta->base_;
  REMAT_CHECK(fn->num_inputs() == 1, "Functions which modify views in-place must return a single Variable (",
              fn->name(), " returns ", fn->num_inputs(), ")");
  set_gradient_edge(base, Edge(std::make_shared<CopySlices>(base, TensorGeometry(t), fn), 0));
  (void)grad_fn(t);  // the view's own grad_fn: regenerated from the rebased base
}

edge_list collect_next_edges(const std::vector<Tensor>& tensors) {
  edge_list edges;
  edges.reserve(tensors.size());
  for (const Tensor& t : tensors) edges.push_back(gradient_edge(t));
  return edges;
}

bool any_requires_grad(const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

}  // namespace impl

Tensor tensor_data(const Tensor& t) {
  auto impl = make_intrusive<TensorImpl>(t.impl()->storage(), t.dtype(), t.sizes(), t.strides(),
                                         t.storage_offset());
  impl->set_is_view(t.impl()->is_view());
  return Tensor(std::move(impl));
}

}  // namespace remat::autograd

namespace remat {

using autograd::AutogradMeta;
using autograd::impl::get_autograd_meta;

bool Tensor::requires_grad() const {
  AutogradMeta* m = get_autograd_meta(*this);
  return m != nullptr && m->requires_grad();
}

Tensor& Tensor::requires_grad_(bool requires_grad) {
  REMAT_CHECK(defined(), "requires_grad_: called on an undefined Tensor");
  AutogradMeta* m = get_autograd_meta(*this);
  REMAT_CHECK(m == nullptr || !m->grad_fn_,
              "you can only change requires_grad flags of leaf variables. If you want to use a "
              "computed variable in a subgraph that doesn't require differentiation use "
              "var_no_grad = var.detach().");
  REMAT_CHECK(!requires_grad || isDifferentiableType(dtype()),
              "only Tensors of floating point and complex dtype can require gradients (got ", remat::toString(dtype()), ")");
  if (m == nullptr && !requires_grad) return *this;
  m = autograd::impl::materialize_autograd_meta(*this);
  m->requires_grad_ = requires_grad;
  autograd::impl::sync_autograd_key(*this);
  return *this;
}

Tensor Tensor::grad() const {
  AutogradMeta* m = get_autograd_meta(*this);
  if (m == nullptr) return Tensor();
  return m->retained_grad_ ? *m->retained_grad_ : m->grad_;
}

void Tensor::set_grad(const Tensor& grad) const {
  if (grad.defined()) {
    REMAT_CHECK(grad.sizes() == sizes(), "assigned grad has data of a different size: ", grad.sizes(),
                " vs. the tensor's ", sizes());
  }
  autograd::impl::materialize_autograd_meta(*this)->grad_ = grad;
}

bool Tensor::is_leaf() const {
  AutogradMeta* m = get_autograd_meta(*this);
  return m == nullptr || m->grad_fn_ == nullptr;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const { return autograd::impl::grad_fn(*this); }

bool Tensor::is_view() const { return autograd::impl::get_view_autograd_meta(*this) != nullptr; }

Tensor Tensor::_base() const {
  autograd::DifferentiableViewMeta* m = autograd::impl::get_view_autograd_meta(*this);
  return m != nullptr ? m->base_ : Tensor();
}

uint32_t Tensor::output_nr() const {
  AutogradMeta* m = get_autograd_meta(*this);
  return m ? m->output_nr_ : 0;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  autograd::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                     retain_graph, create_graph);
}

void Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  REMAT_CHECK(requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
  AutogradMeta* m = get_autograd_meta(*this);
  if (std::shared_ptr<autograd::Node> fn = grad_fn()) {
    fn->add_tensor_pre_hook(m->output_nr_, std::move(hook));
  } else {
    m->leaf_hooks_.push_back(std::move(hook));
  }
}

void Tensor::retain_grad() const {
  REMAT_CHECK(requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
  AutogradMeta* m = get_autograd_meta(*this);
  std::shared_ptr<autograd::Node> fn = grad_fn();
  if (fn == nullptr || m->retained_grad_) return;  // leaves keep .grad anyway
  // The hook writes into a cell shared with this tensor's meta, not into the tensor itself:
  // the node may outlive the tensor, and holding the tensor would make a reference cycle.
  auto cell = std::make_shared<Tensor>();
  m->retained_grad_ = cell;
  fn->add_tensor_pre_hook(m->output_nr_, [cell](const Tensor& g) {
    *cell = cell->defined() ? autograd::ops_by_name::add(*cell, g) : autograd::ops_by_name::clone(g);
    return Tensor();
  });
}

}  // namespace remat
