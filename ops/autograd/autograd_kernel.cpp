// Mirrors the generated torch/csrc/autograd/generated/VariableType*.cpp kernels and
// torch/csrc/autograd/autograd_not_implemented_fallback.cpp: the kernel at the Autograd key.
//
// For an op with a derivative rule: if grad mode is on and an input requires grad, build the
// rule's node, save the inputs it needs (saved-tensor pack hooks fire here, before the op runs),
// run the op below Autograd, then connect and save the outputs.
#include <unordered_map>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/ops_by_name.h"
#include "engine/autograd/variable.h"
#include "engine/dispatch/library.h"
#include "ops/autograd/formula_node.h"

namespace remat::ops::autograd {

using namespace remat::autograd;

// ---------------------------------------------------------------------------------------------
// BackwardContext and FormulaNode
// ---------------------------------------------------------------------------------------------

Tensor BackwardContext::input(size_t a) const {
  REMAT_CHECK(!node_.has_freed_buffers, ERR_BACKWARD_TWICE);
  REMAT_INTERNAL_ASSERT(a < node_.saved_inputs.size() && node_.saved_inputs[a].defined() ||
                            is_none(a),
                        "derivative of ", node_.derivative().op, " reads argument ", a, " which it did not save");
  return a < node_.saved_inputs.size() ? node_.saved_inputs[a].unpack() : Tensor();
}

Tensor BackwardContext::result(size_t i) const {
  REMAT_CHECK(!node_.has_freed_buffers, ERR_BACKWARD_TWICE);
  REMAT_INTERNAL_ASSERT(i < node_.saved_outputs.size(), "derivative of ", node_.derivative().op,
                        " reads output ", i, " which it did not save");
  // saved_for: an output's grad_fn is this very node
  return node_.saved_outputs[i].unpack(
      std::const_pointer_cast<Node>(node_.shared_from_this()));
}

const IValue& BackwardContext::arg(size_t a) const { return node_.args.at(a); }

bool BackwardContext::is_none(size_t a) const {
  return node_.flat_index.at(a) < 0 && node_.args.at(a).isNone();
}

const InputMetadata& BackwardContext::meta(size_t a, size_t k) const {
  int idx = node_.flat_index.at(a);
  REMAT_INTERNAL_ASSERT(idx >= 0, "argument ", a, " of ", node_.derivative().op, " is not a tensor");
  return node_.tensor_meta.at(static_cast<size_t>(idx) + k);
}

size_t BackwardContext::list_size(size_t a) const {
  int idx = node_.flat_index.at(a);
  size_t end = node_.tensor_meta.size();
  for (size_t b = a + 1; b < node_.flat_index.size(); ++b) {
    if (node_.flat_index[b] >= 0) {
      end = static_cast<size_t>(node_.flat_index[b]);
      break;
    }
  }
  return idx < 0 ? 0 : end - static_cast<size_t>(idx);
}

bool BackwardContext::needs(size_t a, size_t k) const {
  int idx = node_.flat_index.at(a);
  return idx >= 0 && node_.should_compute_output(static_cast<size_t>(idx) + k);
}

variable_list FormulaNode::apply(variable_list&& grads) {
  bool any_defined = false;
  for (const Tensor& g : grads) any_defined = any_defined || g.defined();
  if (!any_defined) return variable_list(num_outputs());
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].defined()) {
      const InputMetadata& m = input_metadata(i);
      grads[i] = ops_by_name::zeros_like(make_empty(m.shape, m.dtype, m.device));
    }
  }
  BackwardContext ctx(*this, grads);
  variable_list out = d_->formula(ctx);
  REMAT_CHECK(out.size() == num_outputs(), "derivative of ", d_->op, " returned ", out.size(),
              " gradients for ", num_outputs(), " tensor inputs");
  for (size_t i = 0; i < out.size(); ++i)
    if (!should_compute_output(i)) out[i] = Tensor();
  return out;
}

void FormulaNode::release_variables() {
  for (SavedVariable& v : saved_inputs) v.reset_data();
  for (SavedVariable& v : saved_outputs) v.reset_data();
  has_freed_buffers = true;
}

// ---------------------------------------------------------------------------------------------
// The kernel
// ---------------------------------------------------------------------------------------------

namespace {

bool any_requires_grad(const IValue* args, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (args[i].isTensor() && args[i].toTensor().requires_grad()) return true;
    if (args[i].isTensorList())
      for (const Tensor& t : args[i].toTensorListRef())
        if (t.defined() && t.requires_grad()) return true;
  }
  return false;
}

void redispatch_below_autograd(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  ExcludeDispatchKeyGuard below(DispatchKey::Autograd);
  op.redispatchBoxed(ks & DispatchKeySet::below(DispatchKey::Autograd), stack);
}

struct AutogradFunctor : OperatorKernel {
  Derivative d;
  std::string node_name;
};

void check_inplace(const Derivative& d, const Tensor& self) {
  REMAT_CHECK(!(self.is_leaf() && self.requires_grad()),
              "a leaf Variable that requires grad is being used in an in-place operation. (", d.op,
              " on a tensor of shape ", self.sizes(), ")");
  REMAT_CHECK(!self.impl()->is_view(), d.op,
              ": in-place operations on a view of a tensor that takes part in autograd are not "
              "supported in remat (PyTorch handles them with CopySlices); apply the op to the base "
              "tensor or use the out-of-place op");
}

void autograd_kernel(OperatorKernel* functor, const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  const auto& f = static_cast<const AutogradFunctor&>(*functor);
  const Derivative& d = f.d;
  const size_t n = op.schema().arguments().size();
  IValue* args = stack->data() + (stack->size() - n);

  if (!GradMode::is_enabled() || !any_requires_grad(args, n) || d.non_differentiable) {
    redispatch_below_autograd(op, ks, stack);
    return;
  }

  // 1. The node: one next edge per tensor input (Tensor[] elements each count).
  auto node = std::make_shared<FormulaNode>(&d, &f.node_name);
  node->args.resize(n);
  node->flat_index.assign(n, -1);
  edge_list edges;
  for (size_t i = 0; i < n; ++i) {
    if (args[i].isTensor()) {
      node->flat_index[i] = static_cast<int>(edges.size());
      const Tensor& t = args[i].toTensor();
      edges.push_back(impl::gradient_edge(t));
      node->tensor_meta.emplace_back(t);
    } else if (args[i].isTensorList()) {
      node->flat_index[i] = static_cast<int>(edges.size());
      for (const Tensor& t : args[i].toTensorListRef()) {
        edges.push_back(impl::gradient_edge(t));
        node->tensor_meta.emplace_back(t);
      }
    } else {
      const auto& type = op.schema().arguments()[i].type;
      // A None optional tensor keeps a slot so positions stay aligned.
      if (args[i].isNone() && (type == "Tensor?" || type == "Tensor")) {
        node->flat_index[i] = static_cast<int>(edges.size());
        edges.emplace_back();
        node->tensor_meta.emplace_back();
      } else {
        node->args[i] = args[i];
      }
    }
  }
  node->set_next_edges(std::move(edges));

  // 2. Save inputs now, before the kernel runs (checkpoint's early stop relies on this order).
  Tensor self = d.inplace ? args[0].toTensor() : Tensor();
  if (d.inplace) check_inplace(d, self);
  node->saved_inputs.resize(n);
  for (size_t a : d.saved_args) {
    if (!args[a].isTensor()) continue;
    // An in-place op overwrites self: save a copy of its old value.
    const Tensor& t = args[a].toTensor();
    node->saved_inputs[a] = (d.inplace && a == 0) ? SavedVariable(ops_by_name::clone(t), false)
                                                  : SavedVariable(t, false);
  }

  // 3. Run the op below autograd.
  redispatch_below_autograd(op, ks, stack);

  // 4. Connect the outputs (and save those the rule needs).
  const size_t nret = op.schema().returns().size();
  IValue* rets = stack->data() + (stack->size() - nret);
  std::vector<Tensor> outs;
  for (size_t i = 0; i < nret; ++i) {
    if (rets[i].isTensor()) {
      outs.push_back(rets[i].toTensor());
    } else if (rets[i].isTensorList()) {
      for (const Tensor& t : rets[i].toTensorListRef()) outs.push_back(t);
    } else {
      outs.emplace_back();
    }
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    bool differentiable = outs[i].defined() && isFloatingType(outs[i].dtype());
    for (size_t nd : d.non_differentiable_outputs) differentiable = differentiable && nd != i;
    if (!differentiable) {
      if (outs[i].defined()) node->add_input_metadata(outs[i]);
      else node->add_input_metadata(make_empty({}, kFloat, Device{kMeta}));
      continue;
    }
    if (d.inplace && i == 0) {
      impl::rebase_history(outs[i], node);
    } else {
      impl::set_history(outs[i], node);
    }
  }
  node->saved_outputs.resize(outs.size());
  for (size_t r : d.saved_results) node->saved_outputs[r] = SavedVariable(outs.at(r), /*is_output=*/true);
}

// Ops with no derivative rule: results that would need one get a node that fails in backward.
class NotImplementedNode : public Node {
 public:
  explicit NotImplementedNode(std::string op) : op_(std::move(op)) {}
  variable_list apply(variable_list&&) override {
    throw Error("the derivative for '" + op_ + "' is not implemented.");
  }
  std::string name() const override { return "NotImplemented"; }

 private:
  std::string op_;
};

void autograd_not_implemented_fallback(const OperatorHandle& op, DispatchKeySet ks, Stack* stack) {
  const size_t n = op.schema().arguments().size();
  IValue* args = stack->data() + (stack->size() - n);
  bool needs_grad = GradMode::is_enabled() && any_requires_grad(args, n);
  std::vector<Tensor> inputs;
  if (needs_grad)
    for (size_t i = 0; i < n; ++i)
      if (args[i].isTensor()) inputs.push_back(args[i].toTensor());
  redispatch_below_autograd(op, ks, stack);
  if (!needs_grad || op.schema().is_mutable()) return;
  auto node = std::make_shared<NotImplementedNode>(op.name());
  node->set_next_edges(impl::collect_next_edges(inputs));
  const size_t nret = op.schema().returns().size();
  for (size_t i = stack->size() - nret; i < stack->size(); ++i) {
    if ((*stack)[i].isTensor() && isFloatingType((*stack)[i].toTensor().dtype()) &&
        !op.schema().is_aliasing_return(i - (stack->size() - nret))) {
      impl::set_history((*stack)[i].toTensor(), node);
    }
  }
}

}  // namespace

void register_derivative(Derivative d) {
  auto functor = std::make_shared<AutogradFunctor>();
  functor->node_name = backward_node_name(d.op);
  functor->d = std::move(d);
  const std::string op = functor->d.op;
  Dispatcher::singleton().registerImpl(op, DispatchKey::Autograd,
                                       KernelFunction::makeFromBoxedFunctor(functor, &autograd_kernel));
}

REMAT_LIBRARY_IMPL(_, Autograd, m) {
  m.fallback(KernelFunction::makeFromBoxedLambda(&autograd_not_implemented_fallback));
}
REMAT_LIBRARY_IMPL(_, Autocast, m) { m.fallback(KernelFunction::makeFallthrough()); }

}  // namespace remat::ops::autograd
