// Mirrors the generated torch/csrc/autograd/generated/Functions.h nodes (MulBackward0, ...):
// one generic node that holds what a derivative rule saved and runs the rule.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ops/autograd/derivative.h"

namespace remat::ops::autograd {

class FormulaNode : public remat::autograd::Node {
 public:
  FormulaNode(const Derivative* d, const std::string* name) : d_(d), name_(name) {}

  remat::autograd::variable_list apply(remat::autograd::variable_list&& grads) override;
  void release_variables() override;
  std::string name() const override { return *name_; }

  const Derivative& derivative() const { return *d_; }

  // Filled by the autograd kernel.
  std::vector<IValue> args;                   // non-tensor arguments (tensors as None); empty if none
  const std::vector<int>* flat_index = nullptr;  // argument position -> first edge index (-1: not a tensor)
  std::vector<int> own_flat_index;            // for ops with a Tensor[] argument (varies per call)
  std::vector<InputMetadata> list_meta;       // metadata of Tensor[] elements (edges may be invalid)
  std::vector<SavedVariable> saved_inputs;    // by argument position (undefined if not saved)
  std::vector<SavedVariable> saved_outputs;   // by output index
  std::vector<TensorGeometry> geometries;     // by argument position (Derivative::saved_geometries)
  uint64_t none_args = 0;                     // bit a: tensor argument a was None
  bool has_freed_buffers = false;

 private:
  const Derivative* d_;
  const std::string* name_;
};

}  // namespace remat::ops::autograd
