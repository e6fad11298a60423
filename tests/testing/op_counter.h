// Test helper: a dispatch mode that counts op calls by name (and passes them through), like
// the counting modes of PyTorch's checkpoint tests.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "remat.h"

namespace remat::testing {

class OpCounter : public DispatchMode {
 public:
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    ++counts[op.name()];
    order.push_back(op.name());
    return op.call(args);
  }
  int count(const std::string& name) const {
    auto it = counts.find(name);
    return it == counts.end() ? 0 : it->second;
  }
  void reset() {
    counts.clear();
    order.clear();
  }
  std::map<std::string, int> counts;
  std::vector<std::string> order;
};

// Pushes a fresh OpCounter for the scope; `counter` reads it.
struct CountOps {
  std::shared_ptr<OpCounter> counter = std::make_shared<OpCounter>();
  DispatchModeGuard guard{counter};
};

}  // namespace remat::testing
