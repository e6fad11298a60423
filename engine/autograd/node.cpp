// Mirrors torch/csrc/autograd/function.cpp.
#include "engine/autograd/node.h"

#include <cctype>
#include <typeinfo>

#include "engine/autograd/graph_task.h"

namespace remat::autograd {

namespace {
thread_local uint64_t tls_next_sequence_nr = 0;
// Counted per thread (an atomic here costs more than the rest of Node's constructor).
thread_local int64_t tls_live_nodes = 0;
}  // namespace

uint64_t peek_at_next_sequence_nr() { return tls_next_sequence_nr; }

Node::Node(edge_list next_edges) : Node(tls_next_sequence_nr++, std::move(next_edges)) {}

Node::Node(uint64_t sequence_nr, edge_list next_edges)
    : sequence_nr_(sequence_nr), next_edges_(std::move(next_edges)) {
  ++tls_live_nodes;
}

Node::~Node() { --tls_live_nodes; }

int64_t Node::live_count() { return tls_live_nodes; }

std::string Node::name() const { return typeid(*this).name(); }

bool Node::should_compute_output(size_t i) const {
  if (i >= next_edges_.size()) return false;
  const Edge& e = next_edges_[i];
  if (!e.is_valid()) return false;
  GraphTask* task = current_graph_task();
  return task == nullptr || task->should_compute(e);
}

bool Node::should_compute_any_output() const {
  for (size_t i = 0; i < next_edges_.size(); ++i)
    if (should_compute_output(i)) return true;
  return false;
}

variable_list Node::call_tensor_pre_hooks(variable_list inputs) {
  for (auto& [nr, hook] : tensor_pre_hooks_) {
    if (nr >= inputs.size() || !inputs[nr].defined()) continue;
    Tensor replaced = hook(inputs[nr]);
    if (replaced.defined()) inputs[nr] = std::move(replaced);
  }
  return inputs;
}

std::string backward_node_name(const std::string& op_name) {
  // "aten::scaled_dot_product_attention.overload" -> "ScaledDotProductAttentionBackward0"
  size_t start = op_name.find("::");
  std::string base = op_name.substr(start == std::string::npos ? 0 : start + 2);
  base = base.substr(0, base.find('.'));
  std::string out;
  bool upper = true;
  for (char c : base) {
    if (c == '_') { upper = true; continue; }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + "Backward0";
}

}  // namespace remat::autograd
