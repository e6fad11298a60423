// Mirrors torch/autograd/gradcheck.py: compares autograd's Jacobian with finite differences.
#pragma once

#include <functional>
#include <vector>

#include "engine/core/tensor.h"

namespace remat::autograd {

using GradcheckFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// inputs: float64 tensors; those with requires_grad are checked. Central differences with
// step eps; passes when |analytical - numerical| <= atol + rtol * |numerical| everywhere.
// Throws remat::Error naming the output, the input, the element and both values otherwise.
bool gradcheck(GradcheckFn fn, const std::vector<Tensor>& inputs, double eps = 1e-6, double atol = 1e-5,
               double rtol = 1e-3);

// Checks second derivatives: gradcheck of (inputs, grad_outputs) -> grad(fn(inputs), inputs,
// grad_outputs, create_graph=true), with random grad_outputs drawn from a fixed seed.
bool gradgradcheck(GradcheckFn fn, const std::vector<Tensor>& inputs, double eps = 1e-6, double atol = 1e-5,
                   double rtol = 1e-3);

}  // namespace remat::autograd
