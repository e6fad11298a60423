// Mirrors torch/csrc/autograd/saved_variable.cpp.
#include "engine/autograd/saved_variable.h"

#include <sstream>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/variable.h"

namespace remat::autograd {

const char* const ERR_BACKWARD_TWICE =
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.";

SavedVariable::SavedVariable(const Tensor& variable, bool is_output) {
  if (!variable.defined()) return;
  was_default_constructed_ = false;
  saved_version_ = static_cast<uint32_t>(variable._version());
  is_leaf_ = variable.is_leaf();
  is_output_ = is_output;

  auto save_metadata = [&] {
    output_nr_ = variable.output_nr();
    if (is_leaf_) {
      grad_accumulator_ = impl::grad_accumulator(variable);
      requires_grad_ = variable.requires_grad();
    } else if (!is_output_) {
      grad_fn_ = variable.grad_fn();
    }
  };

  if (auto hooks = SavedTensorDefaultHooks::top()) {
    save_metadata();
    hooks_ = std::move(hooks);
    NoGradGuard no_grad;  // pack runs under no-grad, once per save
    packed_ = hooks_->pack(variable);
    REMAT_CHECK(saved_version_ == variable._version(),
                "A saved tensor pack hook is modifying its input in place. Tensors provided as input "
                "to pack hook can not be modified by in-place operations as this can lead to "
                "unexpected side-effects.");
    return;
  }
  // An input (its grad_fn is an older node) or a leaf (it holds its accumulator weakly) can be
  // kept as is without forming a cycle.
  // (The memory tracker counts what is kept here as an activation, unless it is something more
  // specific already, like a parameter.)
  claim_memory(variable, MemoryCategory::Activation);
  if (!is_output || is_leaf_) {
    saved_original_ = true;
    data_ = variable;
    return;
  }
  save_metadata();
  data_ = tensor_data(variable);
}

void SavedVariable::reset_data() {
  hooks_.reset();
  packed_.reset();
  grad_fn_.reset();
  data_.reset();
}

Tensor SavedVariable::unpack(std::shared_ptr<Node> saved_for) const {
  if (was_default_constructed_) return Tensor();
  REMAT_CHECK(data_.defined() || hooks_, ERR_BACKWARD_TWICE);

  std::shared_ptr<Node> grad_fn;
  if (!hooks_) {
    grad_fn = saved_original_ ? data_.grad_fn() : nullptr;
  } else {
    grad_fn = grad_fn_;
  }
  if (!is_leaf_ && !grad_fn) {
    REMAT_CHECK(saved_for != nullptr,
                "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_(). "
                "This is not supported, please use out-of-place `.detach()` instead");
    grad_fn = std::move(saved_for);
  }

  // The version check only applies without hooks: hooks may hand back any tensor.
  if (!hooks_) {
    uint32_t current = static_cast<uint32_t>(data_._version());
    if (current != saved_version_) {
      std::ostringstream msg;
      msg << "one of the variables needed for gradient computation has been modified by an "
             "inplace operation: ["
          << data_.toString() << " " << data_.sizes() << "]";
      if (grad_fn) msg << ", which is output " << output_nr_ << " of " << grad_fn->name() << ",";
      msg << " is at version " << current << "; expected version " << saved_version_
          << " instead. Hint: the operation that failed to compute its gradient used a tensor "
             "that was later modified in place.";
      throw Error(msg.str());
    }
  }

  if (!hooks_ && saved_original_) return data_;

  Tensor data = hooks_ ? hooks_->unpack(packed_) : data_;
  REMAT_CHECK(data.defined(),
              "Output of saved tensor unpack_hook expected to be a Tensor but got an undefined Tensor");
  if (!grad_fn && !requires_grad_ && !data.requires_grad()) return data;

  // A fresh tensor on the same data, connected to the original graph (not to whatever history
  // the unpacked tensor has, e.g. a recomputation's).
  Tensor var = tensor_data(data);
  if (grad_fn) {
    impl::set_gradient_edge(var, Edge(std::move(grad_fn), output_nr_));
  } else {
    AutogradMeta* m = impl::materialize_autograd_meta(var);
    m->requires_grad_ = requires_grad_;
    m->grad_accumulator_ = grad_accumulator_;
    impl::sync_autograd_key(var);
  }
  return var;
}

}  // namespace remat::autograd
