// Mirrors torch/_library/custom_ops.py (CustomOpDef: the kernels, register_fake,
// register_autograd), torch/_library/autograd.py (the autograd kernel of a custom op) and
// torch/_library/infer_schema.py (a schema from a function's parameters).
#include "ops/custom_op.h"

#include <map>
#include <mutex>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/variable.h"
#include "engine/dispatch/library.h"

namespace remat {

namespace {

// The op's Tensor arguments in order, a Tensor[] argument's elements in its place (what
// autograd records edges to); tensor_slot[i] tells whether flattened argument i is a Tensor.
struct FlatArguments {
  std::vector<Tensor> tensors;
  std::vector<bool> tensor_slot;
  std::vector<size_t> argument_of_slot;  // index in the schema of each flattened argument
};
FlatArguments flatten_arguments(const FunctionSchema& schema, const IValue* args, size_t n) {
  FlatArguments f;
  for (size_t i = 0; i < n; ++i) {
    const Argument& a = schema.arguments()[i];
    if (a.is_tensor()) {
      f.tensors.push_back(args[i].isNone() ? Tensor() : args[i].toTensor());
      f.tensor_slot.push_back(true);
      f.argument_of_slot.push_back(i);
    } else if (a.is_tensor_list()) {
      for (const Tensor& t : args[i].toTensorListRef()) {
        f.tensors.push_back(t);
        f.tensor_slot.push_back(true);
        f.argument_of_slot.push_back(i);
      }
    } else {
      f.tensor_slot.push_back(false);
      f.argument_of_slot.push_back(i);
    }
  }
  return f;
}
std::vector<Tensor> tensor_arguments(const FunctionSchema& schema, const std::vector<IValue>& args) {
  return flatten_arguments(schema, args.data(), args.size()).tensors;
}

std::vector<Tensor> unalias(const std::vector<Tensor>& inputs, std::vector<Tensor> outputs) {
  // An output that is one of the inputs gets a fresh handle, so autograd never rewrites the
  // input's own history (PyTorch's custom ops forbid returning inputs; remat aliases them).
  for (Tensor& o : outputs)
    for (const Tensor& i : inputs)
      if (o.defined() && o.is_same(i)) o = autograd::tensor_data(o);
  return outputs;
}

}  // namespace

namespace custom_op_detail {

// What a wrapped Function's forward leaves on its context besides the tensors it saves (those
// travel as extra outputs), handed from the op's kernel to setup_context within one autograd
// call of the op. The autograd kernel opens it; a dispatch mode in between may run the kernel
// once, again, or not at all (a SAC cache hit), so setup_context takes whatever was last left.
struct ForwardLeftovers {
  const std::string* op_name = nullptr;   // the op whose autograd call opened it
  std::weak_ptr<autograd::Node> grad_fn;  // the node being recorded
  bool filled = false;
  std::unordered_map<std::string, IValue> saved_data;
  std::unordered_map<std::string, std::any> saved_objects;
  bool materialize_grads = true;
  std::vector<size_t> non_differentiable_outputs;
};

namespace {
thread_local ForwardLeftovers* tls_leftovers = nullptr;

// Makes `slot` the thread's current one for the duration of one autograd call of a custom op.
class LeftoversScope {
 public:
  explicit LeftoversScope(ForwardLeftovers* slot) : previous_(tls_leftovers) { tls_leftovers = slot; }
  ~LeftoversScope() { tls_leftovers = previous_; }
  LeftoversScope(const LeftoversScope&) = delete;
  LeftoversScope& operator=(const LeftoversScope&) = delete;

 private:
  ForwardLeftovers* previous_;
};

}  // namespace

std::string schema_arguments(const std::string& qualified_name, const std::vector<const char*>& types,
                             const std::vector<std::string>& names) {
  REMAT_CHECK(names.empty() || names.size() == types.size(), "as_custom_op: ", qualified_name, ": ", names.size(),
              " argument names given for the ", types.size(), " parameters of forward after its context");
  std::string s = "(";
  for (size_t i = 0; i < types.size(); ++i) {
    s += (i ? ", " : "") + std::string(types[i]) + " " + (names.empty() ? "arg" + std::to_string(i) : names[i]);
  }
  return s + ")";
}

WrappedForward::WrappedForward(const std::string& qualified_name, autograd::AutogradContext& ctx)
    : name_(qualified_name), ctx_(ctx), leftovers_(tls_leftovers) {
  if (leftovers_ != nullptr && *leftovers_->op_name != name_) leftovers_ = nullptr;  // another op's call
  if (leftovers_ != nullptr) {
    ctx_.grad_fn_ = leftovers_->grad_fn;
    tls_leftovers = nullptr;
  }
}

WrappedForward::~WrappedForward() {
  if (leftovers_ != nullptr) tls_leftovers = leftovers_;
}

std::vector<Tensor> WrappedForward::finish(size_t num_outputs, const std::vector<IValue>& args,
                                           std::vector<Tensor> outputs) {
  REMAT_CHECK(outputs.size() == num_outputs, "as_custom_op: ", name_, ": forward returned ", outputs.size(),
              " outputs, expected ", num_outputs, " (pass num_outputs to as_custom_op)");
  for (size_t i = 0; i < args.size(); ++i) {
    bool dirty = args[i].isTensor() && ctx_.is_dirty(args[i].toTensor());
    if (args[i].isTensorList())
      for (const Tensor& t : args[i].toTensorListRef()) dirty = dirty || (t.defined() && ctx_.is_dirty(t));
    REMAT_CHECK(!dirty, "as_custom_op: ", name_, ": forward marked its input '",
                find_op(name_).schema().arguments()[i].name,
                "' dirty; an in-place Function cannot be wrapped as a custom op (a custom op returns new tensors)");
  }
  std::vector<size_t> non_differentiable;
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].defined() && ctx_.is_non_differentiable(outputs[i])) non_differentiable.push_back(i);
  for (const Tensor& t : ctx_.pending_saved()) outputs.push_back(t);
  if (leftovers_ != nullptr) {
    leftovers_->filled = true;
    leftovers_->saved_data = std::move(ctx_.saved_data);
    leftovers_->saved_objects = std::move(ctx_.saved_objects);
    leftovers_->materialize_grads = ctx_.materialize_grads();
    leftovers_->non_differentiable_outputs = std::move(non_differentiable);
  }
  return outputs;
}

}  // namespace custom_op_detail

namespace {

// The backward node of a custom op: runs the registered backward on its AutogradContext.
class CustomOpBackward : public autograd::Node {
 public:
  CustomOpBackward(const CustomOp* op, std::string name) : op_(op), name_(std::move(name)) {}
  autograd::variable_list apply(autograd::variable_list&& grads) override;
  void release_variables() override { ctx.release_variables(); }
  std::string name() const override { return name_; }
  autograd::AutogradContext ctx;
  FlatArguments arguments_;  // tensors released once recorded: only the slots' kinds are kept

 private:
  // One gradient per Tensor input, from either form backward may return.
  autograd::variable_list per_tensor_input(autograd::variable_list grads) const;
  const CustomOp* op_;
  std::string name_;
};

}  // namespace

// The autograd kernel of a custom op with register_autograd.
struct CustomOpAutograd : WrapperKernel {
  explicit CustomOpAutograd(const CustomOp* op) : WrapperKernel(DispatchKey::Autograd), op_(op) {}

  struct State {
    std::shared_ptr<CustomOpBackward> node;
    std::vector<Tensor> inputs;
    custom_op_detail::ForwardLeftovers leftovers;
    custom_op_detail::LeftoversScope scope{&leftovers};
  };

  bool before(const OperatorHandle& op, const IValue* args, size_t n, std::shared_ptr<void>* state) const override {
    if (!autograd::GradMode::is_enabled()) return false;
    FlatArguments flat = flatten_arguments(op.schema(), args, n);
    if (!autograd::impl::any_requires_grad(flat.tensors)) return false;
    auto s = std::make_shared<State>();
    s->node = std::make_shared<CustomOpBackward>(op_, autograd::backward_node_name(op_->name()));
    s->node->set_next_edges(autograd::impl::collect_next_edges(flat.tensors));
    s->node->ctx.grad_fn_ = s->node;
    s->leftovers.op_name = &op_->name();
    s->leftovers.grad_fn = s->node;
    s->inputs = std::move(flat.tensors);
    flat.tensors.clear();
    s->node->arguments_ = std::move(flat);
    *state = std::move(s);
    return true;
  }

  void after(const OperatorHandle&, const std::shared_ptr<void>& state, const IValue* rets, size_t) const override {
    auto s = std::static_pointer_cast<State>(state);
    autograd::AutogradContext& ctx = s->node->ctx;
    const std::vector<Tensor>& outputs = rets[0].toTensorListRef();
    // setup_context first (it may mark outputs non-differentiable), then the outputs join the
    // graph, then the saved tensors are packed (knowing which are this node's outputs).
    op_->setup_context_fn()(&ctx, s->inputs, outputs);
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& o = outputs[i];
      bool differentiable = o.defined() && isFloatingType(o.dtype()) && i < op_->num_differentiable_outputs() &&
                            !ctx.is_non_differentiable(o);
      if (differentiable) autograd::impl::set_history(o, s->node);
      else if (o.defined()) s->node->add_input_metadata(o);
      else s->node->add_input_metadata(autograd::InputMetadata::placeholder());
    }
    ctx.save_variables(outputs);  // the saved-tensor hooks see each saved tensor here, once
  }

 private:
  const CustomOp* op_;
};

autograd::variable_list CustomOpBackward::apply(autograd::variable_list&& grads) {
  if (ctx.materialize_grads()) {  // internal outputs (a wrapped Function's saved tensors) get none
    size_t n = std::min(grads.size(), op_->num_differentiable_outputs());
    for (size_t i = 0; i < n; ++i)
      if (!grads[i].defined()) grads[i] = autograd::zeros_from_metadata(input_metadata(i));
  }
  autograd::variable_list out = per_tensor_input(op_->backward_fn()(&ctx, grads));
  for (size_t i = 0; i < out.size(); ++i)
    if (!should_compute_output(i)) out[i] = Tensor();
  return out;
}

autograd::variable_list CustomOpBackward::per_tensor_input(autograd::variable_list grads) const {
  const size_t num_tensors = num_outputs();
  const size_t num_arguments = arguments_.tensor_slot.size();
  if (grads.size() == num_tensors) return grads;
  if (grads.size() != num_arguments) {
    std::string expected = std::to_string(num_tensors);
    if (num_arguments != num_tensors) expected += " or " + std::to_string(num_arguments);
    throw Error(detail::str("The backward formula for ", op_->name(),
                            " returned an incorrect number of gradients (expected ", expected, ", got ", grads.size(),
                            "). Expected one gradient for each Tensor input, or for each input to the operator. Use an "
                            "undefined Tensor for inputs that do not require a gradient."));
  }
  autograd::variable_list out;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (arguments_.tensor_slot[i]) {
      out.push_back(std::move(grads[i]));
      continue;
    }
    REMAT_CHECK(!grads[i].defined(), "function ", name(), " returned a gradient different than None at position ",
                i + 1, " (argument '", op_->handle().schema().arguments()[arguments_.argument_of_slot[i]].name,
                "'), but the corresponding forward input was not a Variable");
  }
  return out;
}

namespace {
BoxedOpFn box_tensor_list_fn(const std::string& name, OpFn fn) {
  REMAT_CHECK(static_cast<bool>(fn), "custom_op: ", name, " has an empty implementation");
  return [fn = std::move(fn)](const std::vector<IValue>& args) { return fn(args.at(0).toTensorVector()); };
}
}  // namespace

CustomOp::CustomOp(std::string qualified_name, OpFn impl)
    : CustomOp(qualified_name, "(Tensor[] inputs)", box_tensor_list_fn(qualified_name, std::move(impl))) {}

CustomOp::CustomOp(std::string qualified_name, const std::string& arguments, BoxedOpFn impl)
    : name_(std::move(qualified_name)), impl_(std::move(impl)) {
  REMAT_CHECK(name_.find("::") != std::string::npos && name_.find("::") > 0,
              "custom_op: the name must be qualified as 'namespace::name' (got '", name_, "')");
  REMAT_CHECK(name_.compare(0, 6, "aten::") != 0, "custom_op: the 'aten' namespace is reserved (got '", name_, "')");
  REMAT_CHECK(static_cast<bool>(impl_), "custom_op: ", name_, " has an empty implementation");
  Library lib(name_.substr(0, name_.find("::")), std::nullopt);
  lib.def(name_ + arguments + " -> Tensor[]");
  handle_ = find_op(name_);
  auto kernel = [this](bool fake) {
    return [this, fake](const OperatorHandle& op, DispatchKeySet, Stack* stack) {
      const size_t n = op.schema().arguments().size();
      std::vector<IValue> args(stack->end() - static_cast<std::ptrdiff_t>(n), stack->end());
      stack->resize(stack->size() - n);
      REMAT_CHECK(!fake || static_cast<bool>(fake_), "custom op ", name_,
                  " has no fake implementation for the Meta device; call register_fake");
      std::vector<Tensor> outputs = fake ? fake_(args) : impl_(args);
      stack->emplace_back(unalias(tensor_arguments(op.schema(), args), std::move(outputs)));
    };
  };
  lib.impl(name_, DispatchKey::CPU, KernelFunction::makeFromBoxedLambda(kernel(false)));
  lib.impl(name_, DispatchKey::CUDA, KernelFunction::makeFromBoxedLambda(kernel(false)));
  lib.impl(name_, DispatchKey::Meta, KernelFunction::makeFromBoxedLambda(kernel(true)));
}

CustomOp& CustomOp::register_fake(OpFn shape_only_fn) {
  REMAT_CHECK(static_cast<bool>(shape_only_fn), "register_fake: ", name_, ": empty function");
  const FunctionSchema* schema = &handle_.schema();
  return register_fake(BoxedOpFn([schema, fn = std::move(shape_only_fn)](const std::vector<IValue>& args) {
    return fn(tensor_arguments(*schema, args));
  }));
}

CustomOp& CustomOp::register_fake(BoxedOpFn shape_only_fn) {
  REMAT_CHECK(static_cast<bool>(shape_only_fn), "register_fake: ", name_, ": empty function");
  fake_ = std::move(shape_only_fn);
  return *this;
}

CustomOp& CustomOp::register_autograd(CustomBackwardFn backward, SetupContextFn setup_context) {
  REMAT_CHECK(static_cast<bool>(backward), "register_autograd: ", name_, ": empty backward");
  backward_ = std::move(backward);
  setup_context_ = setup_context ? std::move(setup_context)
                                 : SetupContextFn([](autograd::AutogradContext*, const std::vector<Tensor>&,
                                                     const std::vector<Tensor>&) {});
  Dispatcher::singleton().registerImpl(name_, DispatchKey::Autograd,
                                       KernelFunction::makeFromWrapper(std::make_shared<CustomOpAutograd>(this)));
  return *this;
}

CustomOp& CustomOp::set_num_differentiable_outputs(size_t n) {
  num_differentiable_outputs_ = n;
  return *this;
}

std::vector<Tensor> CustomOp::operator()(const std::vector<Tensor>& inputs) const {
  // A schema that opens with a Tensor[] (custom_op's "(Tensor[] inputs)") takes the list as that
  // argument; any other takes one tensor per argument, as the positional call passes them.
  const std::vector<Argument>& arguments = handle_.schema().arguments();
  if (!arguments.empty() && arguments[0].is_tensor_list()) return call_boxed({IValue(inputs)});
  return call_boxed(std::vector<IValue>(inputs.begin(), inputs.end()));
}

std::vector<Tensor> CustomOp::call_boxed(std::vector<IValue> args) const {
  std::vector<IValue> rets = handle_.call(args);
  REMAT_CHECK(rets.size() == 1 && rets[0].isTensorList(), "custom op ", name_, ": expected a Tensor[] return, got ",
              rets.empty() ? "none" : rets[0].tagKind());
  return rets[0].toTensorVector();
}

namespace {
CustomOp& define_custom_op(const std::string& qualified_name, const std::function<std::unique_ptr<CustomOp>()>& make) {
  static std::mutex mutex;
  static auto* ops = new std::map<std::string, std::unique_ptr<CustomOp>>();
  std::lock_guard<std::mutex> g(mutex);
  REMAT_CHECK(ops->count(qualified_name) == 0, "custom_op: ", qualified_name,
              " is already defined (define each custom op once, e.g. in a function-local static)");
  std::unique_ptr<CustomOp> op = make();
  CustomOp& ref = *op;
  (*ops)[qualified_name] = std::move(op);
  return ref;
}
}  // namespace

CustomOp& custom_op(const std::string& qualified_name, OpFn impl) {
  return define_custom_op(qualified_name, [&] { return std::make_unique<CustomOp>(qualified_name, std::move(impl)); });
}

CustomOp& custom_op_detail::define_wrapped_function(const std::string& qualified_name, const std::string& arguments,
                                                    BoxedOpFn forward, CustomBackwardFn backward, size_t num_outputs) {
  CustomOp& op = define_custom_op(qualified_name, [&] {
    return std::make_unique<CustomOp>(qualified_name, arguments, forward);
  });
  op.register_fake(std::move(forward));
  op.set_num_differentiable_outputs(num_outputs);
  // setup_context: what the kernel left (saved_data, ...) back on the node's context, and the
  // extra outputs (forward's saved tensors) saved, in the order forward saved them.
  op.register_autograd(std::move(backward), [num_outputs](autograd::AutogradContext* ctx, const std::vector<Tensor>&,
                                                          const std::vector<Tensor>& outputs) {
    ForwardLeftovers* left = tls_leftovers;
    if (left != nullptr && left->filled) {
      ctx->saved_data = std::move(left->saved_data);
      ctx->saved_objects = std::move(left->saved_objects);
      ctx->set_materialize_grads(left->materialize_grads);
      for (size_t i : left->non_differentiable_outputs) ctx->mark_non_differentiable({outputs[i]});
    }
    auto saved = outputs.begin() + static_cast<std::ptrdiff_t>(num_outputs);
    ctx->save_for_backward(std::vector<Tensor>(saved, outputs.end()));
  });
  return op;
}

}  // namespace remat
