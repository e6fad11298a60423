// Mirrors torch/csrc/autograd/autograd.h: torch.autograd.backward and torch.autograd.grad.
#pragma once

#include <vector>

#include "engine/core/tensor.h"

namespace remat::autograd {

// Accumulates d(sum tensors * grad_tensors)/d(leaf) into each leaf's .grad (or, with inputs,
// only into the given tensors' .grad). grad_tensors may be empty for scalar outputs.
void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors = {},
              bool retain_graph = false, bool create_graph = false,
              const std::vector<Tensor>& inputs = {});

// Returns d(sum outputs * grad_outputs)/d(input) for each input, leaving every .grad untouched.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, bool retain_graph = false,
                         bool create_graph = false, bool allow_unused = false);

}  // namespace remat::autograd
