// Mirrors the counting TorchDispatchMode of PyTorch's checkpoint tests (test/test_utils.py,
// test/test_autograd.py): a dispatch mode that records every op it sees, then runs it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "remat.h"

namespace remat::testing {

struct CountingMode : DispatchMode {
  std::vector<std::string> calls;  // op names, in call order

  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    calls.push_back(op.name());
    return op.call(args);
  }
  int count(const std::string& name) const {
    int n = 0;
    for (const std::string& c : calls) n += c == name;
    return n;
  }
  void clear() { calls.clear(); }
};

// Values of a tensor as a vector (shorthand for assertions).
inline std::vector<double> values(const Tensor& t) { return t.to_vector(); }

// Double-precision options, with or without requires_grad.
inline TensorOptions f64(bool requires_grad = false) {
  return TensorOptions().dtype(kDouble).requires_grad(requires_grad);
}

}  // namespace remat::testing
