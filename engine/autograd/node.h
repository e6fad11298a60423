// Mirrors torch/csrc/autograd/function.h (Node): one backward function of the graph.
//
// A Node takes the gradients of its forward op's outputs ("inputs" of the node) and returns the
// gradients of the forward op's inputs ("outputs" of the node), which flow along next_edges().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/autograd/edge.h"
#include "engine/core/small_shape.h"
#include "engine/core/tensor.h"

namespace remat::autograd {

using variable_list = std::vector<Tensor>;

// What a gradient flowing into a node input must look like (torch/csrc/autograd/input_metadata.h).
struct InputMetadata {
  SmallShape shape;  // inline: recorded for every node input on the hot path
  ScalarType dtype = kFloat;
  Device device;
  InputMetadata() = default;
  explicit InputMetadata(const Tensor& t) : shape(t.sizes()), dtype(t.dtype()), device(t.device()) {}
  void assign(const Tensor& t) {  // in place: Node::add_input_metadata runs for every output
    shape = t.sizes();
    dtype = t.dtype();
    device = t.device();
  }
  // An output that is undefined or not differentiable: a float scalar on Meta, allocating nothing
  // (a placeholder tensor would count bytes in a Meta dry run's statistics).
  static InputMetadata placeholder() {
    InputMetadata m;
    m.device = Device{kMeta};
    return m;
  }
};

// A hook on the gradient flowing into one input of a node (a tensor's register_hook).
using TensorPreHook = std::function<Tensor(const Tensor&)>;
// Hooks on the whole node, before and after it runs.
using FunctionPreHook = std::function<variable_list(const variable_list& grad_outputs)>;
using FunctionPostHook =
    std::function<variable_list(const variable_list& grad_inputs, const variable_list& grad_outputs)>;

class Node : public std::enable_shared_from_this<Node> {
 public:
  // Nodes created later get larger sequence numbers; the engine runs larger ones first.
  explicit Node(edge_list next_edges = {});
  Node(uint64_t sequence_nr, edge_list next_edges);
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Runs the node with its hooks (what the engine calls).
  variable_list operator()(variable_list&& inputs) { return apply(std::move(inputs)); }
  virtual variable_list apply(variable_list&& inputs) = 0;

  // Outputs of this node = inputs of the forward op: where their gradients go.
  const edge_list& next_edges() const { return next_edges_; }
  const Edge& next_edge(size_t i) const { return next_edges_[i]; }
  void set_next_edges(edge_list e) { next_edges_ = std::move(e); }
  void add_next_edge(Edge e) { next_edges_.push_back(std::move(e)); }
  uint32_t num_outputs() const { return static_cast<uint32_t>(next_edges_.size()); }

  // Inputs of this node = outputs of the forward op: their metadata, one per forward output.
  uint32_t add_input_metadata(const Tensor& t) {
    if (num_inputs_ == 0) first_input_metadata_.assign(t);
    else more_input_metadata_.emplace_back(t);
    return num_inputs_++;
  }
  uint32_t add_input_metadata(InputMetadata m) {
    if (num_inputs_ == 0) first_input_metadata_ = std::move(m);
    else more_input_metadata_.push_back(std::move(m));
    return num_inputs_++;
  }
  uint32_t num_inputs() const { return num_inputs_; }
  const InputMetadata& input_metadata(size_t i) const {
    return i == 0 ? first_input_metadata_ : more_input_metadata_[i - 1];
  }

  uint64_t sequence_nr() const { return sequence_nr_; }
  virtual std::string name() const;

  // Frees saved tensors once the node has run (unless the graph is retained).
  virtual void release_variables() {}
  // Whether the gradient for forward input i is wanted: its edge is valid and, in a grad() or
  // backward(inputs=...) call, leads to a requested input.
  bool should_compute_output(size_t output_edge_index) const;
  bool should_compute_any_output() const;

  // Tensor hooks (Tensor::register_hook on a non-leaf): run on the gradient for input nr.
  void add_tensor_pre_hook(uint32_t input_nr, TensorPreHook hook) {
    tensor_pre_hooks_.emplace_back(input_nr, std::move(hook));
  }
  virtual variable_list call_tensor_pre_hooks(variable_list inputs);
  void add_pre_hook(FunctionPreHook hook) { pre_hooks_.push_back(std::move(hook)); }
  void add_post_hook(FunctionPostHook hook) { post_hooks_.push_back(std::move(hook)); }
  const std::vector<FunctionPreHook>& pre_hooks() const { return pre_hooks_; }
  const std::vector<FunctionPostHook>& post_hooks() const { return post_hooks_; }

  // Nodes created minus nodes destroyed on this thread (tests check that graphs are freed).
  static int64_t live_count();

 protected:
  uint64_t sequence_nr_;
  edge_list next_edges_;
  // Most nodes have one input: its metadata is stored inline, the others in a vector.
  InputMetadata first_input_metadata_;
  std::vector<InputMetadata> more_input_metadata_;
  uint32_t num_inputs_ = 0;
  std::vector<std::pair<uint32_t, TensorPreHook>> tensor_pre_hooks_;
  std::vector<FunctionPreHook> pre_hooks_;
  std::vector<FunctionPostHook> post_hooks_;
};

// The thread's next sequence number (torch::autograd::Node::peek_at_next_sequence_nr).
uint64_t peek_at_next_sequence_nr();

// Turns "aten::mm" into PyTorch's node name "MmBackward0".
std::string backward_node_name(const std::string& op_name);

}  // namespace remat::autograd
