// Mirrors torch/_library/custom_ops.py (CustomOpDef: the kernels, register_fake,
// register_autograd) and torch/_library/autograd.py (the autograd kernel of a custom op).
#include "ops/custom_op.h"

#include <map>
#include <mutex>

#include "engine/autograd/grad_mode.h"
#include "engine/autograd/variable.h"
#include "engine/dispatch/library.h"

namespace remat {

namespace custom_op_detail {
namespace {
thread_local std::unordered_map<std::string, IValue> tls_saved_data;
}
void stash_saved_data(std::unordered_map<std::string, IValue> data) { tls_saved_data = std::move(data); }
std::unordered_map<std::string, IValue> take_saved_data() {
  auto out = std::move(tls_saved_data);
  tls_saved_data.clear();
  return out;
}
}  // namespace custom_op_detail

namespace {

std::vector<Tensor> unalias(const std::vector<Tensor>& inputs, std::vector<Tensor> outputs) {
  // An output that is one of the inputs gets a fresh handle, so autograd never rewrites the
  // input's own history (PyTorch's custom ops forbid returning inputs; remat aliases them).
  for (Tensor& o : outputs)
    for (const Tensor& i : inputs)
      if (o.defined() && o.is_same(i)) o = autograd::tensor_data(o);
  return outputs;
}

// The backward node of a custom op: runs the registered backward on its AutogradContext.
class CustomOpBackward : public autograd::Node {
 public:
  CustomOpBackward(const CustomOp* op, std::string name) : op_(op), name_(std::move(name)) {}
  autograd::variable_list apply(autograd::variable_list&& grads) override;
  void release_variables() override { ctx.release_variables(); }
  std::string name() const override { return name_; }
  autograd::AutogradContext ctx;
  size_t num_inputs_ = 0;

 private:
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
  };

  bool before(const OperatorHandle&, const IValue* args, size_t, std::shared_ptr<void>* state) const override {
    const std::vector<Tensor>& inputs = args[0].toTensorListRef();
    if (!autograd::GradMode::is_enabled() || !autograd::impl::any_requires_grad(inputs)) return false;
    auto s = std::make_shared<State>();
    s->node = std::make_shared<CustomOpBackward>(op_, autograd::backward_node_name(op_->name()));
    s->node->set_next_edges(autograd::impl::collect_next_edges(inputs));
    s->node->num_inputs_ = inputs.size();
    s->node->ctx.grad_fn_ = s->node;
    s->inputs = inputs;
    *state = std::move(s);
    return true;
  }

  void after(const OperatorHandle&, const std::shared_ptr<void>& state, const IValue* rets, size_t) const override {
    auto s = std::static_pointer_cast<State>(state);
    const std::vector<Tensor>& outputs = rets[0].toTensorListRef();
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& o = outputs[i];
      bool differentiable = o.defined() && isFloatingType(o.dtype()) && i < op_->num_differentiable_outputs();
      if (differentiable) autograd::impl::set_history(o, s->node);
      else if (o.defined()) s->node->add_input_metadata(o);
      else s->node->add_input_metadata(autograd::InputMetadata::placeholder());
    }
    op_->setup_context_fn()(&s->node->ctx, s->inputs, outputs);
    s->node->ctx.save_variables(outputs);  // the saved-tensor hooks see each saved tensor here, once
  }

 private:
  const CustomOp* op_;
};

autograd::variable_list CustomOpBackward::apply(autograd::variable_list&& grads) {
  if (ctx.materialize_grads()) {
    for (size_t i = 0; i < grads.size(); ++i)
      if (!grads[i].defined()) grads[i] = autograd::zeros_from_metadata(input_metadata(i));
  }
  autograd::variable_list out = op_->backward_fn()(&ctx, grads);
  REMAT_CHECK(out.size() == num_inputs_, "custom op ", op_->handle().name(), ": backward returned ", out.size(),
              " gradients for ", num_inputs_, " inputs");
  for (size_t i = 0; i < out.size(); ++i)
    if (!should_compute_output(i)) out[i] = Tensor();
  return out;
}

CustomOp::CustomOp(std::string qualified_name, OpFn impl) : name_(std::move(qualified_name)), impl_(std::move(impl)) {
  REMAT_CHECK(name_.find("::") != std::string::npos && name_.find("::") > 0,
              "custom_op: the name must be qualified as 'namespace::name' (got '", name_, "')");
  REMAT_CHECK(name_.compare(0, 6, "aten::") != 0, "custom_op: the 'aten' namespace is reserved (got '", name_, "')");
  REMAT_CHECK(static_cast<bool>(impl_), "custom_op: ", name_, " has an empty implementation");
  Library lib(name_.substr(0, name_.find("::")), std::nullopt);
  lib.def(name_ + "(Tensor[] inputs) -> Tensor[]");
  handle_ = find_op(name_);
  auto run = [this](const OperatorHandle&, DispatchKeySet, Stack* stack) {
    std::vector<Tensor> inputs = stack->back().toTensorVector();
    stack->pop_back();
    stack->emplace_back(unalias(inputs, impl_(inputs)));
  };
  auto fake = [this](const OperatorHandle&, DispatchKeySet, Stack* stack) {
    REMAT_CHECK(static_cast<bool>(fake_), "custom op ", name_,
                " has no fake implementation for the Meta device; call register_fake");
    std::vector<Tensor> inputs = stack->back().toTensorVector();
    stack->pop_back();
    stack->emplace_back(unalias(inputs, fake_(inputs)));
  };
  lib.impl(name_, DispatchKey::CPU, KernelFunction::makeFromBoxedLambda(run));
  lib.impl(name_, DispatchKey::CUDA, KernelFunction::makeFromBoxedLambda(run));
  lib.impl(name_, DispatchKey::Meta, KernelFunction::makeFromBoxedLambda(fake));
}

CustomOp& CustomOp::register_fake(OpFn shape_only_fn) {
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
  return handle_.call({IValue(inputs)}).at(0).toTensorVector();
}

CustomOp& custom_op(const std::string& qualified_name, OpFn impl) {
  static std::mutex mutex;
  static auto* ops = new std::map<std::string, std::unique_ptr<CustomOp>>();
  std::lock_guard<std::mutex> g(mutex);
  REMAT_CHECK(ops->count(qualified_name) == 0, "custom_op: ", qualified_name,
              " is already defined (define each custom op once, e.g. in a function-local static)");
  auto op = std::make_unique<CustomOp>(qualified_name, std::move(impl));
  CustomOp& ref = *op;
  (*ops)[qualified_name] = std::move(op);
  return ref;
}

}  // namespace remat
