// Mirrors torch/csrc/autograd/custom_function.cpp (_wrap_outputs, AutogradContext).
#include "engine/autograd/custom_function.h"

#include <cxxabi.h>

#include <cstdlib>

#include "engine/autograd/ops_by_name.h"

namespace remat::autograd {

std::string demangle(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = (status == 0 && d != nullptr) ? d : mangled;
  std::free(d);
  size_t colon = out.rfind("::");
  return colon == std::string::npos ? out : out.substr(colon + 2);
}

Tensor zeros_from_metadata(const InputMetadata& m) {
  return ops_by_name::zeros_like(make_empty(m.shape, m.dtype, m.device));
}

void AutogradContext::save_for_backward(std::vector<Tensor> to_save) { to_save_ = std::move(to_save); }

void AutogradContext::save_variables(const std::vector<Tensor>& outputs) {
  // Take the list first: an output in it holds this context's node, and a pack hook that throws
  // (checkpoint's early stop does) must not leave that reference cycle behind.
  std::vector<Tensor> to_save = std::move(to_save_);
  to_save_.clear();
  saved_variables_.clear();
  auto node = grad_fn_.lock();
  const std::string node_name = node ? node->name() : std::string();
  SavingForNodeGuard saving(&node_name);
  for (const Tensor& t : to_save) {
    bool is_output = false;
    for (const Tensor& o : outputs) is_output = is_output || (t.defined() && o.is_same(t));
    is_output = is_output && t.grad_fn() == node;
    saved_variables_.emplace_back(t, is_output);
  }
}

std::vector<Tensor> AutogradContext::get_saved_variables() const {
  REMAT_CHECK(!has_freed_buffers_, ERR_BACKWARD_TWICE);
  auto node = grad_fn_.lock();
  std::vector<Tensor> out;
  out.reserve(saved_variables_.size());
  for (const SavedVariable& v : saved_variables_) out.push_back(v.unpack(node));
  return out;
}

void AutogradContext::release_variables() {
  for (SavedVariable& v : saved_variables_) v.reset_data();
  has_freed_buffers_ = true;
}

bool AutogradContext::needs_input_grad(size_t i) const {
  auto node = grad_fn_.lock();
  return node != nullptr && node->should_compute_output(i);
}

void AutogradContext::mark_dirty(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs) dirty_.insert(t.unsafeGetTensorImpl());
}

void AutogradContext::mark_non_differentiable(const std::vector<Tensor>& outputs) {
  for (const Tensor& t : outputs) non_differentiable_.insert(t.unsafeGetTensorImpl());
}

namespace {
// _view_as_self_with_no_grad: a new tensor on t's data that autograd knows is a view of t.
Tensor view_as_self(const Tensor& t) {
  Tensor view = make_alias(t, t.sizes(), t.strides(), t.storage_offset());
  impl::as_view(t, view, CreationMeta::IN_CUSTOM_FUNCTION);
  return view;
}
}  // namespace

std::vector<Tensor> wrap_outputs(const std::vector<Tensor>& inputs, std::vector<Tensor> outputs,
                                 const std::shared_ptr<Node>& node, AutogradContext& ctx, bool is_executable) {
  auto is_input = [&](const Tensor& t) {
    for (const Tensor& in : inputs)
      if (in.is_same(t)) return true;
    return false;
  };
  for (Tensor& out : outputs) {
    if (!out.defined()) {
      if (is_executable) node->add_input_metadata(InputMetadata::placeholder());
      continue;
    }
    bool dirty = ctx.is_dirty(out);
    REMAT_CHECK(!dirty || is_input(out), "mark_dirty: a tensor marked dirty must be an input of forward");
    if (!is_executable) {
      if (is_input(out) && !dirty) out = view_as_self(out);  // a fresh handle, like view_as
    } else if (ctx.is_non_differentiable(out)) {
      node->add_input_metadata(out);
    } else if (dirty) {
      REMAT_CHECK(!(out.is_leaf() && out.requires_grad()),
                  "a leaf Variable that requires grad has been used in an in-place operation.");
      // Its base's history becomes CopySlices(node), which holds one output only.
      REMAT_CHECK(!(out.is_view() && outputs.size() > 1),
                  "If your Function modifies inplace an input that is a view of another Tensor, your Function "
                  "cannot return more than one Tensor. This is not supported by the current autograd engine. You "
                  "should either make sure the input is not a view (using .clone() for example) or make your "
                  "Function only return one Tensor (potentially splitting it into two Functions: one doing the "
                  "inplace that returns a single Tensor and a second one that does the other operations). (",
                  node->name(), " returns ", outputs.size(), " tensors)");
      impl::rebase_history(out, node);
      continue;
    } else {
      // An input returned as is becomes a view of it, so as not to overwrite the input's history.
      if (is_input(out)) out = view_as_self(out);
      impl::set_history(out, node);
    }
    // A view this Function returns must not be modified in place: CopySlices would bypass its
    // backward.
    if (DifferentiableViewMeta* view = impl::get_view_autograd_meta(out); view != nullptr && !(dirty && is_input(out)))
      view->creation_meta_ = CreationMeta::IN_CUSTOM_FUNCTION;
  }
  return outputs;
}

}  // namespace remat::autograd
