// Mirrors torch/csrc/autograd/variable.cpp (impl:: helpers) and the autograd methods of
// Tensor (torch/csrc/autograd/VariableTypeManual.cpp, python_variable.cpp).
#include "engine/autograd/variable.h"

#include "engine/autograd/accumulate_grad.h"
#include "engine/autograd/autograd.h"
#include "engine/autograd/grad_mode.h"
#include "engine/autograd/ops_by_name.h"

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
  t.unsafeGetTensorImpl()->set_autograd_key(m != nullptr && m->requires_grad());
}

void set_gradient_edge(const Tensor& t, Edge edge) {
  AutogradMeta* m = materialize_autograd_meta(t);
  m->grad_fn_ = std::move(edge.function);
  m->output_nr_ = edge.input_nr;
  m->version_at_history_ = t.impl()->version();
  sync_autograd_key(t);
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = t.defined() ? get_autograd_meta(t) : nullptr;
  if (m == nullptr) return Edge();
  if (m->grad_fn_) {
    REMAT_CHECK(!t.impl()->is_view() || t.impl()->version() == m->version_at_history_,
                "a view (shape ", t.sizes(), ", made by ", m->grad_fn_->name(),
                ") is used after an in-place operation on its base or another view of it; its autograd "
                "history is stale. remat does not replay view histories (PyTorch regenerates them): "
                "take the view again after the in-place operation.");
    return Edge(m->grad_fn_, m->output_nr_);
  }
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
  set_history(t, fn);
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
  REMAT_CHECK(!requires_grad || isFloatingType(dtype()),
              "only Tensors of floating point dtype can require gradients (got ", remat::toString(dtype()), ")");
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

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  AutogradMeta* m = get_autograd_meta(*this);
  return m ? m->grad_fn_ : nullptr;
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
  if (m->grad_fn_) {
    m->grad_fn_->add_tensor_pre_hook(m->output_nr_, std::move(hook));
  } else {
    m->leaf_hooks_.push_back(std::move(hook));
  }
}

void Tensor::retain_grad() const {
  REMAT_CHECK(requires_grad(), "can't retain_grad on Tensor that has requires_grad=False");
  AutogradMeta* m = get_autograd_meta(*this);
  if (m->grad_fn_ == nullptr || m->retained_grad_) return;  // leaves keep .grad anyway
  // The hook writes into a cell shared with this tensor's meta, not into the tensor itself:
  // the node may outlive the tensor, and holding the tensor would make a reference cycle.
  auto cell = std::make_shared<Tensor>();
  m->retained_grad_ = cell;
  m->grad_fn_->add_tensor_pre_hook(m->output_nr_, [cell](const Tensor& g) {
    *cell = cell->defined() ? autograd::ops_by_name::add(*cell, g) : autograd::ops_by_name::clone(g);
    return Tensor();
  });
}

}  // namespace remat
