// Mirrors the generated torch/csrc/autograd/generated/VariableType*.cpp kernels and
// torch/csrc/autograd/autograd_not_implemented_fallback.cpp: the kernel at the Autograd key.
//
// For an op with a derivative rule: if grad mode is on and an input requires grad, build the
// rule's node, save the inputs that the needed gradients read (saved-tensor pack hooks fire
// here, before the op runs), run the op below Autograd, then connect the outputs and save those
// the needed gradients read.
#include <algorithm>
#include <mutex>
#include <optional>

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

namespace {

// "[0, 2]": the arguments a saved tensor is kept for (internal-assert messages).
std::string read_by_str(const Derivative& d, SavedTensor::Kind kind, size_t index) {
  for (const SavedTensor& s : d.saved)
    if (s.kind == kind && s.index == index) return IValue(Shape(s.read_by.begin(), s.read_by.end())).str();
  return "[] (it is not in the rule's table entry)";
}

}  // namespace

Tensor BackwardContext::input(size_t a) const {
  REMAT_CHECK(!node_.has_freed_buffers, ERR_BACKWARD_TWICE);
  if (is_none(a)) return Tensor();
  REMAT_INTERNAL_ASSERT(a < node_.saved_inputs.size() && node_.saved_inputs[a].defined(), "derivative of ",
                        node_.derivative().op, " reads argument ", a,
                        ", which it did not save: its table entry saves it only for the gradients of arguments ",
                        read_by_str(node_.derivative(), SavedTensor::Kind::Argument, a),
                        ", and none of them is needed");
  if (unpacked_inputs_.size() <= a) unpacked_inputs_.resize(a + 1);
  if (!unpacked_inputs_[a].defined()) unpacked_inputs_[a] = node_.saved_inputs[a].unpack();
  return unpacked_inputs_[a];
}

Tensor BackwardContext::result(size_t i) const {
  REMAT_CHECK(!node_.has_freed_buffers, ERR_BACKWARD_TWICE);
  REMAT_INTERNAL_ASSERT(i < node_.saved_outputs.size() && node_.saved_outputs[i].defined(), "derivative of ",
                        node_.derivative().op, " reads output ", i,
                        ", which it did not save: its table entry saves it only for the gradients of arguments ",
                        read_by_str(node_.derivative(), SavedTensor::Kind::Output, i), ", and none of them is needed");
  if (unpacked_results_.size() <= i) unpacked_results_.resize(i + 1);
  // saved_for: an output's grad_fn is this very node
  if (!unpacked_results_[i].defined())
    unpacked_results_[i] = node_.saved_outputs[i].unpack(std::const_pointer_cast<Node>(node_.shared_from_this()));
  return unpacked_results_[i];
}

const IValue& BackwardContext::arg(size_t a) const {
  REMAT_INTERNAL_ASSERT(a < node_.args.size(), "argument ", a, " of ", node_.derivative().op, " is not a scalar");
  return node_.args[a];
}

bool BackwardContext::is_none(size_t a) const {
  if (a < 64 && (node_.none_args >> a) & 1u) return true;
  return a < node_.args.size() && node_.flat_index->at(a) < 0 && node_.args[a].isNone();
}

const InputMetadata& BackwardContext::meta(size_t a, size_t k) const {
  int idx = node_.flat_index->at(a);
  REMAT_INTERNAL_ASSERT(idx >= 0, "argument ", a, " of ", node_.derivative().op, " is not a tensor");
  if (!node_.list_meta.empty()) return node_.list_meta.at(static_cast<size_t>(idx) + k);
  // An input's metadata is what the node its gradient flows to recorded for it.
  const Edge& e = node_.next_edge(static_cast<size_t>(idx) + k);
  REMAT_INTERNAL_ASSERT(e.is_valid(), "derivative of ", node_.derivative().op, " reads the metadata of argument ",
                        a, ", which needs no gradient");
  return e.function->input_metadata(e.input_nr);
}

const TensorGeometry& BackwardContext::geometry(size_t a) const {
  REMAT_INTERNAL_ASSERT(a < node_.geometries.size(), "derivative of ", node_.derivative().op,
                        " reads the geometry of argument ", a, " which it did not save");
  return node_.geometries[a];
}

size_t BackwardContext::list_size(size_t a) const {
  int idx = node_.flat_index->at(a);
  if (idx < 0) return 0;
  size_t end = node_.num_outputs();
  for (size_t b = a + 1; b < node_.flat_index->size(); ++b) {
    if ((*node_.flat_index)[b] >= 0) {
      end = static_cast<size_t>((*node_.flat_index)[b]);
      break;
    }
  }
  return end - static_cast<size_t>(idx);
}

bool BackwardContext::needs(size_t a, size_t k) const {
  int idx = node_.flat_index->at(a);
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

// Whether a gradient that reads s will be computed: one of its arguments requires grad (a
// valid edge). PyTorch's Node::should_compute_output, not task_should_compute_output: this runs
// in forward (and in a backward with create_graph, whose graph task must not decide what a
// later backward may need).
bool any_gradient_needed(const FormulaNode& node, const SavedTensor& s) {
  for (size_t a : s.read_by)
    if (node.next_edge(static_cast<size_t>(node.flat_index->at(a))).is_valid()) return true;
  return false;
}

// The autograd kernel of one op with a derivative rule: a WrapperKernel, so the dispatcher runs
// the op below Autograd between before() and after().
class AutogradKernel : public WrapperKernel {
 public:
  explicit AutogradKernel(Derivative d)
      : WrapperKernel(DispatchKey::Autograd), d_(std::move(d)), node_name_(backward_node_name(d_.op)) {
    for (const SavedTensor& s : d_.saved) {
      if (s.kind == SavedTensor::Kind::Argument) saved_args_end_ = std::max(saved_args_end_, s.index + 1);
      saves_outputs_ = saves_outputs_ || s.kind == SavedTensor::Kind::Output;
    }
  }

  bool before(const OperatorHandle& op, const IValue* args, size_t n, std::shared_ptr<void>* state) const override {
    if (d_.non_differentiable || !GradMode::is_enabled() || !any_requires_grad(args, n)) return false;
    const auto& schema_args = op.schema().arguments();
    // Layout of the arguments, from the schema, on first use (registration order is not known).
    std::call_once(layout_once_, [&] {
      // Checked first: a throw leaves the layout unrecorded, for the next call to check again.
      for (const SavedTensor& s : d_.saved) {
        for (size_t a : s.read_by) {
          REMAT_INTERNAL_ASSERT(a < schema_args.size() && schema_args[a].is_tensor(), "derivative of ", d_.op,
                                ": a saved tensor is read by the gradient of argument ", a,
                                ", which is not a Tensor argument");
        }
      }
      int edges = 0;
      for (const Argument& a : schema_args) {
        has_list_ = has_list_ || a.is_tensor_list();
        has_scalar_args_ = has_scalar_args_ || !(a.is_tensor() || a.is_tensor_list());
        flat_index_.push_back(a.is_tensor() ? edges++ : -1);
      }
    });

    if (d_.inplace) impl::check_inplace(args[0].toTensor(), d_.op);  // before the op changes anything

    // 1. The node: one next edge per tensor input (each Tensor[] element counts).
    auto node = std::make_shared<FormulaNode>(&d_, &node_name_);
    edge_list edges;
    edges.reserve(n);
    if (has_list_) node->own_flat_index.assign(n, -1);
    for (size_t i = 0; i < n; ++i) {
      if (!has_list_ && flat_index_[i] < 0) continue;
      if (args[i].isTensorList()) {
        node->own_flat_index[i] = static_cast<int>(edges.size());
        for (const Tensor& t : args[i].toTensorListRef()) {
          edges.push_back(impl::gradient_edge(t));
          node->list_meta.emplace_back(t);
        }
      } else if (schema_args[i].is_tensor()) {
        if (has_list_) {
          node->own_flat_index[i] = static_cast<int>(edges.size());
          node->list_meta.emplace_back(args[i].isTensor() ? InputMetadata(args[i].toTensor()) : InputMetadata());
        }
        if (args[i].isTensor()) {
          edges.push_back(impl::gradient_edge(args[i].toTensor()));
        } else {
          edges.emplace_back();  // a None optional tensor keeps its slot
          if (i < 64) node->none_args |= uint64_t{1} << i;
        }
      }
    }
    node->flat_index = has_list_ ? &node->own_flat_index : &flat_index_;
    node->set_next_edges(std::move(edges));
    if (has_scalar_args_) {
      node->args.resize(n);
      for (size_t i = 0; i < n; ++i)
        if (!schema_args[i].is_tensor() && !schema_args[i].is_tensor_list()) node->args[i] = args[i];
    }

    for (size_t a : d_.saved_geometries) {
      if (node->geometries.size() <= a) node->geometries.resize(a + 1);
      node->geometries[a] = TensorGeometry(args[a].toTensor());
    }

    // 2. Save inputs now, before the kernel runs (checkpoint's early stop relies on this order),
    //    each only if a gradient that reads it is needed.
    if (saved_args_end_ > 0) {
      SavingForNodeGuard saving(&node_name_);
      node->saved_inputs.resize(saved_args_end_);
      for (const SavedTensor& s : d_.saved) {
        if (s.kind != SavedTensor::Kind::Argument || !args[s.index].isTensor()) continue;
        if (!any_gradient_needed(*node, s)) continue;
        const Tensor& t = args[s.index].toTensor();
        // An in-place op overwrites self: save a copy of its old value.
        node->saved_inputs[s.index] = (d_.inplace && s.index == 0) ? SavedVariable(ops_by_name::clone(t), false)
                                                                   : SavedVariable(t, false);
      }
    }
    *state = std::move(node);
    return true;
  }

  void after(const OperatorHandle&, const std::shared_ptr<void>& state, const IValue* rets, size_t nret) const override {
    FormulaNode* const fn = static_cast<FormulaNode*>(state.get());
    // An aliasing handle: shares state's reference count (set_history copies it where needed).
    // Typed as Node, as set_history takes it: no converted temporary (a reference-count update)
    // per output.
    const std::shared_ptr<Node> node(state, fn);
    // 3. Connect the outputs (and save those the rule needs).
    size_t out_index = 0;
    auto connect = [&](const Tensor& t) {
      size_t i = out_index++;
      bool differentiable = t.defined() && isDifferentiableType(t.dtype());
      for (size_t nd : d_.non_differentiable_outputs) differentiable = differentiable && nd != i;
      if (!differentiable) {
        node->add_input_metadata(t.defined() ? t : make_empty({}, kFloat, Device{kMeta}));
      } else if (d_.inplace && i == 0) {
        impl::rebase_history(t, node);
      } else {
        impl::set_history(t, node);
      }
    };
    for (size_t i = 0; i < nret; ++i) {
      if (rets[i].isTensor()) {
        connect(rets[i].toTensor());
      } else if (rets[i].isTensorList()) {
        for (const Tensor& t : rets[i].toTensorListRef()) connect(t);
      } else {
        connect(Tensor());
      }
    }
    if (saves_outputs_) {
      SavingForNodeGuard saving(&node_name_);
      fn->saved_outputs.resize(out_index);
      for (const SavedTensor& s : d_.saved) {
        if (s.kind != SavedTensor::Kind::Output || !any_gradient_needed(*fn, s)) continue;
        REMAT_INTERNAL_ASSERT(s.index < nret && rets[s.index].isTensor());
        fn->saved_outputs[s.index] = SavedVariable(rets[s.index].toTensor(), /*is_output=*/true);
      }
    }
  }

 private:
  Derivative d_;
  std::string node_name_;
  size_t saved_args_end_ = 0;
  bool saves_outputs_ = false;
  mutable std::once_flag layout_once_;
  mutable std::vector<int> flat_index_;  // argument -> first edge (ops without a Tensor[] argument)
  mutable bool has_list_ = false;
  mutable bool has_scalar_args_ = false;
};

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
  if (needs_grad) {
    for (size_t i = 0; i < n; ++i) {
      if (args[i].isTensor()) inputs.push_back(args[i].toTensor());
      if (args[i].isTensorList())
        for (const Tensor& t : args[i].toTensorListRef()) inputs.push_back(t);
    }
  }
  redispatch_below_autograd(op, ks, stack);
  if (!needs_grad || op.schema().is_mutable()) return;
  auto node = std::make_shared<NotImplementedNode>(op.name());
  node->set_next_edges(impl::collect_next_edges(inputs));
  const size_t nret = op.schema().returns().size();
  const size_t first = stack->size() - nret;
  for (size_t i = first; i < stack->size(); ++i) {
    if (op.schema().is_aliasing_return(i - first)) continue;
    IValue& r = (*stack)[i];
    if (r.isTensor() && isDifferentiableType(r.toTensor().dtype())) {
      impl::set_history(r.toTensor(), node);
    } else if (r.isTensorList()) {
      for (const Tensor& t : r.toTensorListRef())
        if (t.defined() && isDifferentiableType(t.dtype())) impl::set_history(t, node);
    }
  }
}

}  // namespace

void register_derivative(Derivative d) {
  const std::string name = d.op;
  REMAT_CHECK(!name.empty(), "register_derivative: a rule without an op name (saving ", d.saved.size(),
              " tensors); a Def's rule is named by Def::name or Def::inplace_name");
  // One rule per op (a Def gives its derivative once): a second one would silently replace the
  // first, as a duplicate derivatives.yaml entry is refused by load_derivatives.py.
  if (std::optional<OperatorHandle> op = Dispatcher::singleton().findOp(name)) {
    REMAT_CHECK(!op->entry()->hasKernelForKey(DispatchKey::Autograd), "register_derivative: ", name,
                " already has a derivative (an autograd kernel); an op's rule is registered once");
  }
  auto kernel = std::make_shared<AutogradKernel>(std::move(d));
  Dispatcher::singleton().registerImpl(name, DispatchKey::Autograd, KernelFunction::makeFromWrapper(std::move(kernel)));
}

REMAT_LIBRARY_IMPL(_, Autograd, m) {
  m.fallback(KernelFunction::makeFromBoxedFunction<&autograd_not_implemented_fallback>());
}
REMAT_LIBRARY_IMPL(_, Autocast, m) { m.fallback(KernelFunction::makeFallthrough()); }

}  // namespace remat::ops::autograd
