// Mirrors torch/csrc/autograd/graph_task.h: the state of one backward() or grad() call.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/autograd/node.h"

namespace remat::autograd {

struct GraphTask {
  // For grad() and backward(inputs=...): which nodes must run, and which node inputs are
  // captured as results. Empty: run the whole graph (a plain backward()).
  struct ExecInfo {
    struct Capture {
      uint32_t input_idx;   // node input to capture
      uint32_t output_idx;  // position in the results
    };
    bool needed = false;  // the node runs (it leads to a requested input)
    std::vector<Capture> captures;
    bool should_execute() const { return needed || !captures.empty(); }
  };

  uint64_t id = 0;
  bool keep_graph = false;
  bool create_graph = false;
  int reentrant_depth = 0;
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, ExecInfo> exec_info;
  std::vector<Tensor> captured_vars;

  // Whether gradient for this edge is wanted in this task.
  bool should_compute(const Edge& e) const {
    if (!e.is_valid()) return false;
    if (exec_info.empty()) return true;
    auto it = exec_info.find(e.function.get());
    return it != exec_info.end() && it->second.should_execute();
  }
};

// The innermost graph task running on this thread (nullptr outside backward).
GraphTask* current_graph_task();

}  // namespace remat::autograd
