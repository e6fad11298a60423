// Mirrors torch/csrc/autograd/saved_variable.h: a tensor saved for backward.
//
// Saving records the tensor's version; unpacking checks it (an in-place change in between is an
// error) unless saved-tensor hooks are in use, in which case the innermost pair's pack hook ran
// at save time and its unpack hook runs at every unpack. An output of the node that saves it is
// stored without its grad_fn (which is that very node), so no reference cycle forms.
#pragma once

#include <any>
#include <memory>

#include "engine/autograd/node.h"
#include "engine/autograd/saved_variable_hooks.h"

namespace remat::autograd {

extern const char* const ERR_BACKWARD_TWICE;

class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& variable, bool is_output);

  // saved_for: the node that owns this SavedVariable (the grad_fn of a saved output).
  Tensor unpack(std::shared_ptr<Node> saved_for = nullptr) const;
  // Frees the data (and the packed object, which for checkpoint is its holder).
  void reset_data();
  bool defined() const { return !was_default_constructed_; }
  bool has_hooks() const { return hooks_ != nullptr; }

 private:
  Tensor data_;                              // the tensor, or its data without history
  std::shared_ptr<SavedTensorHooks> hooks_;  // the pair active at save time, if any
  std::any packed_;                          // what the pack hook returned
  std::shared_ptr<Node> grad_fn_;            // non-output non-leaf saved through hooks
  std::weak_ptr<Node> grad_accumulator_;
  uint32_t saved_version_ = 0;
  uint32_t output_nr_ = 0;
  bool was_default_constructed_ = true;
  bool is_leaf_ = false;
  bool is_output_ = false;
  bool saved_original_ = false;
  bool requires_grad_ = false;
};

}  // namespace remat::autograd
