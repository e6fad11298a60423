// Mirrors torch/csrc/autograd/autograd.cpp (run_backward).
#include "engine/autograd/autograd.h"

#include "engine/autograd/engine.h"
#include "engine/autograd/ops_by_name.h"
#include "engine/autograd/variable.h"

namespace remat::autograd {

namespace {

// Builds the root edges and their gradients (implicit ones for scalar outputs).
void make_roots(const char* api, const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
                edge_list& roots, variable_list& grads) {
  REMAT_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), api, ": got ",
              grad_outputs.size(), " gradients for ", outputs.size(), " tensors");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    REMAT_CHECK(out.defined(), api, ": tensor ", i, " is undefined");
    Edge edge = impl::gradient_edge(out);
    REMAT_CHECK(edge.is_valid(), "element ", i, " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      REMAT_CHECK(out.numel() == 1, "grad can be implicitly created only for scalar outputs (tensor ", i,
                  " has shape ", out.sizes(), ")");
      g = ops_by_name::ones_like(out);
    } else {
      REMAT_CHECK(g.sizes() == out.sizes(), api, ": Mismatch in shape: grad_output[", i, "] has a shape of ",
                  g.sizes(), " and output[", i, "] has a shape of ", out.sizes(), ".");
    }
    roots.push_back(std::move(edge));
    grads.push_back(std::move(g));
  }
}

}  // namespace

void backward(const std::vector<Tensor>& tensors, const std::vector<Tensor>& grad_tensors, bool retain_graph,
              bool create_graph, const std::vector<Tensor>& inputs) {
  edge_list roots;
  variable_list grads;
  make_roots("backward", tensors, grad_tensors, roots, grads);
  edge_list outputs;
  bool all_leaves = true;
  for (const Tensor& in : inputs) {
    REMAT_CHECK(in.defined() && in.requires_grad(), "backward: One of the differentiated Tensors does not require grad");
    outputs.push_back(impl::gradient_edge(in));
    all_leaves = all_leaves && in.is_leaf();
  }
  if (!all_leaves) {
    // A non-leaf input has no AccumulateGrad node: capture the gradients (as grad() does),
    // then accumulate them into .grad.
    variable_list captured = Engine::get_default_engine().execute(
        roots, grads, retain_graph || create_graph, create_graph, /*accumulate_grad=*/false, outputs);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!captured[i].defined()) continue;
      Tensor old = inputs[i].grad();
      inputs[i].set_grad(old.defined() ? ops_by_name::add(old, captured[i]) : captured[i]);
    }
    return;
  }
  Engine::get_default_engine().execute(roots, grads, retain_graph || create_graph, create_graph,
                                       /*accumulate_grad=*/true, outputs);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph, bool create_graph,
                         bool allow_unused) {
  edge_list roots;
  variable_list grads;
  make_roots("grad", outputs, grad_outputs, roots, grads);
  REMAT_CHECK(!inputs.empty(), "grad requires non-empty inputs.");
  edge_list out_edges;
  for (size_t i = 0; i < inputs.size(); ++i) {
    REMAT_CHECK(inputs[i].defined() && inputs[i].requires_grad(), "One of the differentiated Tensors does not require grad");
    out_edges.push_back(impl::gradient_edge(inputs[i]));
  }
  variable_list result = Engine::get_default_engine().execute(
      roots, grads, retain_graph || create_graph, create_graph, /*accumulate_grad=*/false, out_edges);
  for (size_t i = 0; i < result.size(); ++i) {
    REMAT_CHECK(allow_unused || result[i].defined(),
                "One of the differentiated Tensors appears to not have been used in the graph. Set "
                "allow_unused=True if this is the desired behavior.");
  }
  return result;
}

}  // namespace remat::autograd
