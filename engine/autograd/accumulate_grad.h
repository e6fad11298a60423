// Mirrors torch/csrc/autograd/functions/accumulate_grad.h: the node at a leaf that adds the
// incoming gradient into leaf.grad.
#pragma once

#include <cstdint>
#include <limits>

#include "engine/autograd/node.h"

namespace remat::autograd {

class AccumulateGrad : public Node {
 public:
  // Runs as soon as it is ready (the highest sequence number), as in PyTorch.
  explicit AccumulateGrad(Tensor variable)
      : Node(std::numeric_limits<uint64_t>::max(), {}), variable_(std::move(variable)) {
    add_input_metadata(variable_);
  }
  variable_list apply(variable_list&& grads) override;
  std::string name() const override { return "torch::autograd::AccumulateGrad"; }
  // The leaf's own hooks (Tensor::register_hook on a leaf) run before accumulation.
  variable_list call_tensor_pre_hooks(variable_list inputs) override;
  const Tensor& variable() const { return variable_; }

 private:
  Tensor variable_;
};

}  // namespace remat::autograd
