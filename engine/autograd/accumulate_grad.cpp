// Mirrors torch/csrc/autograd/functions/accumulate_grad.cpp.
#include "engine/autograd/accumulate_grad.h"

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/ops_by_name.h"
#include "engine/autograd/variable.h"

namespace remat::autograd {

variable_list AccumulateGrad::call_tensor_pre_hooks(variable_list inputs) {
  inputs = Node::call_tensor_pre_hooks(std::move(inputs));
  AutogradMeta* m = impl::get_autograd_meta(variable_);
  if (m == nullptr || inputs.empty() || !inputs[0].defined()) return inputs;
  for (auto& hook : m->leaf_hooks_) {
    Tensor replaced = hook(inputs[0]);
    if (replaced.defined()) inputs[0] = std::move(replaced);
  }
  return inputs;
}

namespace {
// Nothing but new_grad refers to its buffer: its storage is held by new_grad alone, or by new_grad
// and the base it is a view of when nothing else holds that base (a weight's gradient from
// linear's backward is t(t(a fresh product)): as a view it keeps the product alive). PyTorch
// checks only new_grad's own use count (accumulate_grad.h) and steals such views too.
bool owns_its_buffer(const Tensor& new_grad) {
  const auto storage_refs = new_grad.impl()->storage().use_count();
  if (storage_refs == 1) return true;
  const DifferentiableViewMeta* view = impl::get_view_autograd_meta(new_grad);
  return view != nullptr && storage_refs == 2 && view->base_.use_count() == 1 &&
         view->base_.impl()->storage() == new_grad.impl()->storage();
}
}  // namespace

variable_list AccumulateGrad::apply(variable_list&& grads) {
  REMAT_INTERNAL_ASSERT(grads.size() == 1);
  Tensor new_grad = std::move(grads[0]);
  grads.clear();
  if (!new_grad.defined()) return {};
  AutogradMeta* m = impl::materialize_autograd_meta(variable_);
  if (!GradMode::is_enabled()) {
    if (!m->grad_.defined()) {
      // Steal the buffer when nothing else refers to it and it is dense (an expanded gradient
      // would be accumulated into in place later), else copy it. A stolen view is kept without
      // its view metadata (PyTorch stores new_grad.detach()), which lets its base go.
      bool stealable = new_grad.use_count() == 1 && owns_its_buffer(new_grad) && !new_grad.requires_grad() &&
                       new_grad.is_contiguous() &&
                       new_grad.nbytes() == static_cast<int64_t>(new_grad.impl()->storage()->nbytes());
      if (!stealable) {
        m->grad_ = ops_by_name::clone(new_grad);
      } else if (new_grad.is_view()) {
        m->grad_ = tensor_data(new_grad);
      } else {
        m->grad_ = std::move(new_grad);
      }
    } else if (!m->grad_.requires_grad()) {
      ops_by_name::add_(m->grad_, new_grad);  // in place: .grad keeps its buffer
    } else {
      m->grad_ = ops_by_name::add(m->grad_, new_grad);
    }
  } else {
    // create_graph: the accumulated gradient keeps its history (double backward).
    m->grad_ = m->grad_.defined() ? ops_by_name::add(m->grad_, new_grad) : ops_by_name::clone(new_grad);
  }
  claim_memory(m->grad_, MemoryCategory::Gradient);
  return {};
}

}  // namespace remat::autograd
