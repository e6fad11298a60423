// Mirrors torch/csrc/autograd/functions/tensor.cpp (CopySlices).
#include "engine/autograd/functions/tensor.h"

#include "engine/autograd/graph_task.h"
#include "engine/autograd/ops_by_name.h"
#include "engine/autograd/saved_variable.h"
#include "engine/autograd/variable.h"

namespace remat::autograd {

CopySlices::CopySlices(const Tensor& base, TensorGeometry view, std::shared_ptr<Node> fn)
    : base_(base), view_(std::move(view)), fn_(std::move(fn)) {
  add_input_metadata(base);
  next_edges_.reserve(fn_->num_outputs());
  add_next_edge(impl::gradient_edge(base));
  for (uint32_t i = 1; i < fn_->num_outputs(); ++i) add_next_edge(fn_->next_edge(i));
}

void CopySlices::update_exec_info() {
  GraphTask* task = current_graph_task();
  if (task == nullptr || task->exec_info.empty() || fn_->num_outputs() == 0) return;
  const Edge& fn_edge = fn_->next_edge(0);
  if (!fn_edge.is_valid()) return;
  // Nothing downstream of fn's edge 0 needs to run for this task (it leads to the base's old
  // history, which this node's edge 0 already reaches), so marking it is enough.
  if (task->exec_info.count(fn_edge.function.get()) == 0 && should_compute_output(0))
    task->exec_info[fn_edge.function.get()].needed = true;
}

variable_list CopySlices::apply(variable_list&& grads) {
  REMAT_INTERNAL_ASSERT(grads.size() == 1, "CopySlices expects one gradient, got ", grads.size());
  const Tensor grad = std::move(grads[0]);
  if (!grad.defined()) return variable_list(num_outputs());
  REMAT_CHECK(fn_ != nullptr, ERR_BACKWARD_TWICE);

  // The base's gradient, laid out like the base, and the view's slice of it.
  Tensor result = make_empty_strided(base_.sizes, base_.strides, grad.dtype(), grad.device());
  ops_by_name::copy_(result, grad);
  Tensor grad_slice = ops_by_name::as_strided(result, view_.sizes, view_.strides,
                                              view_.storage_offset - base_.storage_offset);
  update_exec_info();
  // fn gets a copy: grad_slice is overwritten below, and fn may save its input (double backward).
  variable_list res = (*fn_)({ops_by_name::clone(grad_slice)});

  variable_list grad_inputs(num_outputs());
  for (size_t i = 0; i < res.size() && i < grad_inputs.size(); ++i) {
    if (!should_compute_output(i)) continue;
    if (i == 0) {
      // An undefined gradient for the view means zeros on its slice (a custom Function's None).
      if (res[0].defined()) {
        ops_by_name::copy_(grad_slice, res[0]);
      } else {
        ops_by_name::copy_(grad_slice, ops_by_name::zeros_like(grad_slice));
      }
      grad_inputs[0] = result;
    } else {
      grad_inputs[i] = std::move(res[i]);
    }
  }
  return grad_inputs;
}

}  // namespace remat::autograd
