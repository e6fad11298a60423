// Mirrors torch/csrc/autograd/custom_function.h: user-defined autograd Functions.
//
//   struct MulTwo : Function<MulTwo> {
//     static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x) {
//       ctx->save_for_backward({x});
//       return {x * 2.0};
//     }
//     static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
//       // forward: y = x * 2
//       return {grads[0] * 2.0};
//     }
//   };
//   Tensor y = MulTwo::apply(x)[0];
#pragma once

#include <any>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/node.h"
#include "engine/autograd/saved_variable.h"
#include "engine/autograd/variable.h"
#include "engine/core/ivalue.h"

namespace remat::autograd {

struct AutogradContext {
  // Tensors backward will need; saved (through the active saved-tensor hooks) after forward.
  void save_for_backward(std::vector<Tensor> to_save);
  // Unpacks the saved tensors (throws once the graph has been freed).
  std::vector<Tensor> get_saved_variables() const;
  std::unordered_map<std::string, IValue> saved_data;
  // C++ objects backward needs that are not IValues (a callable, captured state).
  std::unordered_map<std::string, std::any> saved_objects;
  // Whether backward must compute the gradient of the i-th tensor input.
  bool needs_input_grad(size_t i) const;
  // Inputs that forward modified in place (their history moves to this node).
  void mark_dirty(const std::vector<Tensor>& inputs);
  // Outputs that have no gradient (e.g. indices).
  void mark_non_differentiable(const std::vector<Tensor>& outputs);
  // Whether undefined incoming gradients reach backward as zeros (default) or undefined.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }

  // ---- used by Function<T>::apply and CppNode<T> ----
  void save_variables(const std::vector<Tensor>& outputs);
  void release_variables();
  bool is_dirty(const Tensor& t) const { return dirty_.count(t.unsafeGetTensorImpl()) != 0; }
  bool is_non_differentiable(const Tensor& t) const {
    return non_differentiable_.count(t.unsafeGetTensorImpl()) != 0;
  }
  bool materialize_grads() const { return materialize_grads_; }
  // Tensors given to save_for_backward and not yet saved (custom-op wrappers read them).
  const std::vector<Tensor>& pending_saved() const { return to_save_; }
  std::weak_ptr<Node> grad_fn_;

 private:
  std::vector<Tensor> to_save_;
  std::vector<SavedVariable> saved_variables_;
  std::unordered_set<TensorImpl*> dirty_;
  std::unordered_set<TensorImpl*> non_differentiable_;
  bool has_freed_buffers_ = false;
  bool materialize_grads_ = true;
};

// Demangled C++ type name (for node names).
std::string demangle(const char* mangled);

// Wraps forward outputs: connects the differentiable ones to node, handles dirty inputs and
// outputs that are inputs (custom_function.cpp, _wrap_outputs).
std::vector<Tensor> wrap_outputs(const std::vector<Tensor>& inputs, std::vector<Tensor> outputs,
                                 const std::shared_ptr<Node>& node, AutogradContext& ctx, bool is_executable);

template <class T>
class CppNode : public Node {
 public:
  variable_list apply(variable_list&& grads) override {
    if (ctx_.materialize_grads()) {
      for (size_t i = 0; i < grads.size(); ++i) {
        if (!grads[i].defined()) grads[i] = zeros_for(input_metadata(i));
      }
    }
    variable_list outs = T::backward(&ctx_, std::move(grads));
    size_t num_vars = num_outputs();
    if (outs.size() == is_variable_input_.size() && outs.size() != num_vars) {
      variable_list filtered;  // backward returned one per forward argument: keep the tensors'
      for (size_t i = 0; i < outs.size(); ++i)
        if (is_variable_input_[i]) filtered.push_back(std::move(outs[i]));
      outs = std::move(filtered);
    }
    REMAT_CHECK(outs.size() == num_vars, "function ", name(),
                " returned an incorrect number of gradients (expected ", num_vars, ", got ", outs.size(), ")");
    for (size_t i = 0; i < outs.size(); ++i)
      if (!should_compute_output(i)) outs[i] = Tensor();
    return outs;
  }
  void release_variables() override { ctx_.release_variables(); }
  std::string name() const override { return demangle(typeid(T).name()) + "Backward"; }

  AutogradContext ctx_;
  std::vector<bool> is_variable_input_;

 private:
  static Tensor zeros_for(const InputMetadata& m);
};

Tensor zeros_from_metadata(const InputMetadata& m);
template <class T>
Tensor CppNode<T>::zeros_for(const InputMetadata& m) { return zeros_from_metadata(m); }

namespace detail {
template <class A>
void extract_var(std::vector<bool>& is_var, std::vector<Tensor>& vars, const A& a) {
  if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) {
    is_var.push_back(true);
    vars.push_back(a);
  } else if constexpr (std::is_same_v<std::decay_t<A>, std::vector<Tensor>>) {
    for (const Tensor& t : a) {  // each element of a tensor list is an input of its own
      is_var.push_back(true);
      vars.push_back(t);
    }
  } else {
    is_var.push_back(false);
  }
}
}  // namespace detail

template <class T>
struct Function {
  // Runs T::forward under no-grad and, when an input requires grad, records a CppNode<T>.
  template <class... Args>
  static auto apply(Args&&... args) {
    auto node = std::make_shared<CppNode<T>>();
    std::vector<Tensor> inputs;
    (detail::extract_var(node->is_variable_input_, inputs, args), ...);
    bool is_executable = GradMode::is_enabled() && impl::any_requires_grad(inputs);
    if (is_executable) node->set_next_edges(impl::collect_next_edges(inputs));
    node->ctx_.grad_fn_ = node;

    using Out = decltype(T::forward(&node->ctx_, std::forward<Args>(args)...));
    std::vector<Tensor> raw;
    {
      AutoGradMode no_grad(false);
      if constexpr (std::is_same_v<Out, Tensor>) {
        raw.push_back(T::forward(&node->ctx_, std::forward<Args>(args)...));
      } else {
        raw = T::forward(&node->ctx_, std::forward<Args>(args)...);
      }
    }
    std::vector<Tensor> outputs = wrap_outputs(inputs, std::move(raw), node, node->ctx_, is_executable);
    if (is_executable) node->ctx_.save_variables(outputs);
    if constexpr (std::is_same_v<Out, Tensor>) {
      return outputs[0];
    } else {
      return outputs;
    }
  }
};

}  // namespace remat::autograd
