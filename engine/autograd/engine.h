// Mirrors torch/csrc/autograd/engine.h: runs a backward pass over the graph.
//
// remat's engine runs on the calling thread (as PyTorch does for CPU work): a ready queue
// ordered by sequence_nr (later nodes first), dependency counts per node, and an InputBuffer
// per node that sums incoming gradients. A node may call backward itself (a reentrant
// backward, as reentrant checkpoint does): that runs a nested graph task on the same thread.
#pragma once

#include <cstdint>

#include "engine/autograd/edge.h"
#include "engine/autograd/graph_task.h"
#include "engine/autograd/node.h"

namespace remat::autograd {

class Engine {
 public:
  static Engine& get_default_engine();

  // roots: where the given gradients enter. outputs (for grad() / backward(inputs=)): the edges
  // whose incoming gradients are returned (captured) instead of accumulated.
  // accumulate_grad: run AccumulateGrad nodes (backward) or not (grad).
  variable_list execute(const edge_list& roots, const variable_list& grads, bool keep_graph,
                        bool create_graph, bool accumulate_grad, const edge_list& outputs = {});

  // The innermost running graph task's id, or -1 outside backward.
  static int64_t current_graph_task_id();
  // A fresh id that no graph task will ever have (checkpoint uses one when a saved tensor is
  // unpacked outside any backward).
  static int64_t new_graph_task_id();
  // false while the current graph task is a grad() or a backward(inputs=...), where only part
  // of the graph runs (torch.autograd._is_checkpoint_valid).
  static bool is_checkpoint_valid();
  // Depth of nested (reentrant) backward calls on this thread.
  static int reentrant_depth();
};

}  // namespace remat::autograd
