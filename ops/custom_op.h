// Mirrors torch.library.custom_op (torch/_library/custom_ops.py): a user op that the
// dispatcher sees as ONE opaque op, so a dispatch mode (and a selective-checkpoint policy) can
// save or recompute it as a unit; and the seed's wrapper that turns a legacy autograd
// Function into such an op.
//
//   CustomOp& my_mul = custom_op("mylib::my_mul", [](const std::vector<Tensor>& in) {
//     return std::vector<Tensor>{in[0] * in[1]};
//   });
//   my_mul.register_fake([](const std::vector<Tensor>& in) { return std::vector<Tensor>{empty_like(in[0])}; })
//         .register_autograd(
//             [](autograd::AutogradContext* ctx, const std::vector<Tensor>& grads) {
//               auto s = ctx->get_saved_variables();       // forward: out = a * b
//               return std::vector<Tensor>{grads[0] * s[1], grads[0] * s[0]};
//             },
//             [](autograd::AutogradContext* ctx, const std::vector<Tensor>& in, const std::vector<Tensor>&) {
//               ctx->save_for_backward(in);
//             });
//   Tensor y = my_mul({a, b})[0];
//
// The op's schema is "ns::name(Tensor[] inputs) -> Tensor[]".
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/autograd/custom_function.h"
#include "engine/dispatch/dispatcher.h"

namespace remat {

using OpFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
using CustomBackwardFn =
    std::function<std::vector<Tensor>(autograd::AutogradContext*, const std::vector<Tensor>& grads)>;
using SetupContextFn = std::function<void(autograd::AutogradContext*, const std::vector<Tensor>& inputs,
                                          const std::vector<Tensor>& outputs)>;

class CustomOp {
 public:
  CustomOp(std::string qualified_name, OpFn impl);

  // Shape-only implementation, used on the Meta device.
  CustomOp& register_fake(OpFn shape_only_fn);
  // backward(ctx, grads) returns one gradient per input; setup_context(ctx, inputs, outputs)
  // saves what backward needs (the saved-tensor hooks see each saved tensor once).
  CustomOp& register_autograd(CustomBackwardFn backward, SetupContextFn setup_context);
  // Outputs with index >= n are internal (not differentiable), e.g. a wrapped Function's saved
  // tensors; the call operator still returns them.
  CustomOp& set_num_differentiable_outputs(size_t n);

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  const OperatorHandle& handle() const { return handle_; }
  const std::string& name() const { return name_; }
  const CustomBackwardFn& backward_fn() const { return backward_; }
  const SetupContextFn& setup_context_fn() const { return setup_context_; }
  size_t num_differentiable_outputs() const { return num_differentiable_outputs_; }

 private:
  std::string name_;
  OperatorHandle handle_;
  OpFn impl_;
  OpFn fake_;
  CustomBackwardFn backward_;
  SetupContextFn setup_context_;
  size_t num_differentiable_outputs_ = static_cast<size_t>(-1);
};

// Defines (once per name) and returns a custom op; the object lives for the program.
CustomOp& custom_op(const std::string& qualified_name, OpFn impl);

namespace custom_op_detail {
// The saved_data of the wrapped Function's forward, handed from the op's kernel to its
// setup_context on the same thread (non-tensor state cannot be an op output).
void stash_saved_data(std::unordered_map<std::string, IValue> data);
std::unordered_map<std::string, IValue> take_saved_data();
}  // namespace custom_op_detail

// The seed's wrapper: Function<F> as one custom op. The op returns F's outputs plus the tensors
// F::forward saved (as extra, non-differentiable outputs); setup_context saves those; backward
// hands them back to F::backward. Each saved tensor goes through the saved-tensor hooks once.
// F::forward must take only Tensor arguments.
template <class F>
CustomOp& as_custom_op(const std::string& qualified_name, size_t num_outputs = 1) {
  CustomOp& op = custom_op(qualified_name, [num_outputs](const std::vector<Tensor>& inputs) {
    autograd::AutogradContext scratch;
    std::vector<Tensor> outs = F::forward(&scratch, inputs);
    REMAT_CHECK(outs.size() == num_outputs, "as_custom_op: forward returned ", outs.size(), " outputs, expected ",
                num_outputs);
    for (const Tensor& t : scratch.pending_saved()) outs.push_back(t);
    custom_op_detail::stash_saved_data(std::move(scratch.saved_data));
    return outs;
  });
  op.set_num_differentiable_outputs(num_outputs);
  op.register_autograd(
      [](autograd::AutogradContext* ctx, const std::vector<Tensor>& grads) {
        autograd::AutogradContext bridge;
        bridge.provide_saved_variables(ctx->get_saved_variables());
        bridge.saved_data = ctx->saved_data;
        std::vector<Tensor> g(grads.begin(), grads.begin() + static_cast<std::ptrdiff_t>(
                                                               std::any_cast<size_t>(ctx->saved_objects.at("n"))));
        return F::backward(&bridge, g);
      },
      [num_outputs](autograd::AutogradContext* ctx, const std::vector<Tensor>&, const std::vector<Tensor>& outputs) {
        ctx->save_for_backward(std::vector<Tensor>(outputs.begin() + static_cast<std::ptrdiff_t>(num_outputs),
                                                   outputs.end()));
        ctx->saved_objects["n"] = num_outputs;
        ctx->saved_data = custom_op_detail::take_saved_data();
      });
  return op;
}

}  // namespace remat
