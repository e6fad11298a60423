// Mirrors torch.library.custom_op (torch/_library/custom_ops.py): a user op that the
// dispatcher sees as ONE opaque op, so a dispatch mode (and a selective-checkpoint policy) can
// save or recompute it as a unit; and the seed's wrapper that turns an autograd Function into
// such an op (schema inference as torch/_library/infer_schema.py does it).
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
// custom_op's schema is "ns::name(Tensor[] inputs) -> Tensor[]". A Function written the PyTorch
// way becomes an op whose schema has one argument per parameter of its forward:
//
//   struct MulScaled : autograd::Function<MulScaled> {
//     static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x, Tensor y, double alpha) {
//       ctx->save_for_backward({x, y});
//       ctx->saved_data["alpha"] = alpha;
//       return {x * y * alpha};
//     }
//     static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) { ... }
//   };
//   CustomOp& op = as_custom_op<MulScaled>("mylib::mul_scaled");  // (Tensor arg0, Tensor arg1, float arg2) -> Tensor[]
//   Tensor z = op(x, y, 0.5)[0];                                     // as torch.ops.mylib.mul_scaled(x, y, 0.5)
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "engine/autograd/custom_function.h"
#include "engine/dispatch/dispatcher.h"

namespace remat {

using OpFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
// An implementation that takes the op's arguments boxed, in schema order (as a mode sees them).
using BoxedOpFn = std::function<std::vector<Tensor>(const std::vector<IValue>& args)>;
using CustomBackwardFn =
    std::function<std::vector<Tensor>(autograd::AutogradContext*, const std::vector<Tensor>& grads)>;
using SetupContextFn = std::function<void(autograd::AutogradContext*, const std::vector<Tensor>& inputs,
                                          const std::vector<Tensor>& outputs)>;

namespace custom_op_detail {
template <class T>
inline constexpr bool always_false_v = false;

// One positional argument of a call, boxed as torch.ops boxes a Python value: integers as int,
// floating-point values as float, text as str.
template <class T>
IValue to_argument(T&& value) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, bool>) {
    return IValue(static_cast<bool>(value));
  } else if constexpr (std::is_integral_v<D>) {
    return IValue(static_cast<int64_t>(value));
  } else if constexpr (std::is_floating_point_v<D>) {
    return IValue(static_cast<double>(value));
  } else if constexpr (std::is_same_v<D, const char*> || std::is_same_v<D, char*>) {
    return IValue(std::string(value));
  } else if constexpr (std::is_same_v<D, Tensor> || std::is_same_v<D, std::vector<Tensor>> ||
                       std::is_same_v<D, Shape> || std::is_same_v<D, std::string> || std::is_same_v<D, IValue>) {
    return IValue(std::forward<T>(value));
  } else {
    static_assert(always_false_v<T>,
                  "CustomOp: an argument of a custom op call must be a Tensor, std::vector<Tensor>, a number, "
                  "bool, Shape or a string");
    return IValue();
  }
}
}  // namespace custom_op_detail

class CustomOp {
 public:
  // "ns::name(Tensor[] inputs) -> Tensor[]": impl gets the tensor list.
  CustomOp(std::string qualified_name, OpFn impl);
  // "ns::name<arguments> -> Tensor[]", arguments e.g. "(Tensor x, float alpha)": impl gets them boxed.
  CustomOp(std::string qualified_name, const std::string& arguments, BoxedOpFn impl);

  // Shape-only implementation, used on the Meta device. The OpFn form gets the op's Tensor
  // arguments (a Tensor[] argument's elements in its place); the boxed form gets every argument.
  CustomOp& register_fake(OpFn shape_only_fn);
  CustomOp& register_fake(BoxedOpFn shape_only_fn);
  // backward(ctx, grads) returns one gradient per Tensor input (or one per argument of the op,
  // undefined for non-Tensor ones); setup_context(ctx, inputs, outputs) saves what backward
  // needs (the saved-tensor hooks see each saved tensor once) and may mark outputs
  // non-differentiable; it runs before the outputs are connected to the graph, as in PyTorch.
  CustomOp& register_autograd(CustomBackwardFn backward, SetupContextFn setup_context);
  // Outputs with index >= n are internal (not differentiable), e.g. a wrapped Function's saved
  // tensors; the call operator still returns them.
  CustomOp& set_num_differentiable_outputs(size_t n);

  // The vector call op({x, y}): with custom_op's schema (or any that opens with a Tensor[]) the
  // list is that argument; otherwise each tensor goes to one argument, as op(x, y) passes them.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  // Positional arguments, as torch.ops.ns.name(x, y, 0.5): each becomes one IValue argument.
  template <class... Args>
  std::vector<Tensor> operator()(Args&&... args) const {
    return call_boxed({custom_op_detail::to_argument(std::forward<Args>(args))...});
  }
  const OperatorHandle& handle() const { return handle_; }
  const std::string& name() const { return name_; }
  const CustomBackwardFn& backward_fn() const { return backward_; }
  const SetupContextFn& setup_context_fn() const { return setup_context_; }
  size_t num_differentiable_outputs() const { return num_differentiable_outputs_; }

 private:
  std::vector<Tensor> call_boxed(std::vector<IValue> args) const;

  std::string name_;
  OperatorHandle handle_;
  BoxedOpFn impl_;
  BoxedOpFn fake_;
  CustomBackwardFn backward_;
  SetupContextFn setup_context_;
  size_t num_differentiable_outputs_ = static_cast<size_t>(-1);
};

// Defines (once per name) and returns a custom op; the object lives for the program.
CustomOp& custom_op(const std::string& qualified_name, OpFn impl);

namespace custom_op_detail {

// The schema type of each C++ type a wrapped Function's forward may take after its context
// (as infer_schema maps Python annotations), and how the kernel unboxes the op's argument.
template <class T>
struct SchemaType {
  static constexpr bool supported = false;
};
template <>
struct SchemaType<Tensor> {
  static constexpr bool supported = true;
  static constexpr const char* name = "Tensor";
  static Tensor unbox(const IValue& v) { return v.isNone() ? Tensor() : v.toTensor(); }
};
template <>
struct SchemaType<std::vector<Tensor>> {
  static constexpr bool supported = true;
  static constexpr const char* name = "Tensor[]";
  static std::vector<Tensor> unbox(const IValue& v) { return v.toTensorVector(); }
};
template <>
struct SchemaType<double> {
  static constexpr bool supported = true;
  static constexpr const char* name = "float";
  static double unbox(const IValue& v) { return v.toDouble(); }
};
template <>
struct SchemaType<int64_t> {
  static constexpr bool supported = true;
  static constexpr const char* name = "int";
  static int64_t unbox(const IValue& v) { return v.toInt(); }
};
template <>
struct SchemaType<bool> {
  static constexpr bool supported = true;
  static constexpr const char* name = "bool";
  static bool unbox(const IValue& v) { return v.toBool(); }
};
template <>
struct SchemaType<Shape> {
  static constexpr bool supported = true;
  static constexpr const char* name = "int[]";
  static Shape unbox(const IValue& v) { return v.toIntVector(); }
};
template <>
struct SchemaType<std::string> {
  static constexpr bool supported = true;
  static constexpr const char* name = "str";
  static std::string unbox(const IValue& v) { return v.toStringRef(); }
};

// A parameter is taken by value, by const reference or by rvalue reference: the kernel passes
// values it unboxed, so a non-const reference would change nothing the caller sees.
template <class P>
inline constexpr bool is_mutable_reference_v =
    std::is_lvalue_reference_v<P> && !std::is_const_v<std::remove_reference_t<P>>;
template <class P>
inline constexpr bool is_forward_parameter_v = SchemaType<std::decay_t<P>>::supported && !is_mutable_reference_v<P>;

// Instantiated once per parameter, so a failing assertion's context names its index and type.
template <size_t Index, class P>
constexpr bool check_forward_parameter() {
  static_assert(!is_mutable_reference_v<P>,
                "as_custom_op<F>: a parameter of F::forward is a non-const reference; take it by value or by const "
                "reference (a custom op's arguments are its inputs, never written back)");
  static_assert(SchemaType<std::decay_t<P>>::supported,
                "as_custom_op<F>: a parameter of F::forward has a type no custom op argument has; use Tensor, "
                "std::vector<Tensor>, double, int64_t, bool, Shape or std::string (by value or const&; a schema "
                "float is a double, an int an int64_t)");
  return true;
}

template <class Parameters, size_t... I>
constexpr bool check_forward_parameters(std::index_sequence<I...>) {
  return (check_forward_parameter<I, std::tuple_element_t<I, Parameters>>() && ... && true);
}

// static std::vector<Tensor> forward(AutogradContext*, P...) (or returning one Tensor).
template <class Fn>
struct ForwardSignature {
  static constexpr bool takes_context = false;
};
template <class R, class... P>
struct ForwardSignature<R (*)(autograd::AutogradContext*, P...)> {
  static constexpr bool takes_context = true;
  static constexpr bool returns_tensors = std::is_same_v<R, std::vector<Tensor>> || std::is_same_v<R, Tensor>;
  using Parameters = std::tuple<P...>;
  static std::vector<const char*> schema_types() { return {SchemaType<std::decay_t<P>>::name...}; }

  template <class F>
  static std::vector<Tensor> call(autograd::AutogradContext* ctx, const std::vector<IValue>& args) {
    return call_with<F>(ctx, args, std::index_sequence_for<P...>{});
  }
  template <class F, size_t... I>
  static std::vector<Tensor> call_with(autograd::AutogradContext* ctx, const std::vector<IValue>& args,
                                       std::index_sequence<I...>) {
    if constexpr (std::is_same_v<R, Tensor>) {
      return {F::forward(ctx, SchemaType<std::decay_t<P>>::unbox(args[I])...)};
    } else {
      return F::forward(ctx, SchemaType<std::decay_t<P>>::unbox(args[I])...);
    }
  }
};

// "(Tensor arg0, float arg1)" from the parameter types and optional names (checked against them).
std::string schema_arguments(const std::string& qualified_name, const std::vector<const char*>& types,
                             const std::vector<std::string>& names);
struct ForwardLeftovers;
// One run of F::forward in the op's kernel. It claims what the op's autograd kernel opened for
// this call, if any (so ops that forward calls see none), and lends ctx the node being recorded
// (for needs_input_grad); finish() checks the outputs, appends the saved tensors as extra
// outputs and hands what else forward left on ctx (saved_data, ...) to setup_context.
class WrappedForward {
 public:
  WrappedForward(const std::string& qualified_name, autograd::AutogradContext& ctx);
  ~WrappedForward();
  WrappedForward(const WrappedForward&) = delete;
  WrappedForward& operator=(const WrappedForward&) = delete;
  std::vector<Tensor> finish(size_t num_outputs, const std::vector<IValue>& args, std::vector<Tensor> outputs);

 private:
  const std::string& name_;
  autograd::AutogradContext& ctx_;
  ForwardLeftovers* leftovers_;
};
// Defines the op: forward for every backend (the Meta device included: F::forward is made of
// remat ops), setup_context that saves the extra outputs, and backward.
CustomOp& define_wrapped_function(const std::string& qualified_name, const std::string& arguments,
                                  BoxedOpFn forward, CustomBackwardFn backward, size_t num_outputs);

}  // namespace custom_op_detail

// The seed's wrapper: Function<F> as one custom op. F::forward takes its context and then Tensors,
// std::vector<Tensor>s, doubles, int64_ts, bools, Shapes or std::strings; each is one argument of
// the op's schema (named arg_names, or arg0, arg1, ...). The op returns F's num_outputs outputs
// plus the tensors F::forward saved (as extra, non-differentiable outputs); setup_context saves
// those, so each saved tensor goes through the saved-tensor hooks once, and F::backward reads
// them from its context as usual. F::backward returns one gradient per Tensor argument (each
// element of a Tensor[] counts as one) or one per argument, undefined for the non-Tensor ones.
template <class F>
CustomOp& as_custom_op(const std::string& qualified_name, const std::vector<std::string>& arg_names,
                       size_t num_outputs = 1) {
  using Signature = custom_op_detail::ForwardSignature<decltype(&F::forward)>;
  static_assert(Signature::takes_context,
                "as_custom_op<F>: F::forward must be a static function forward(AutogradContext* ctx, ...)");
  if constexpr (Signature::takes_context) {
    static_assert(Signature::returns_tensors, "as_custom_op<F>: F::forward must return std::vector<Tensor> or Tensor");
    using Parameters = typename Signature::Parameters;
    static_assert(custom_op_detail::check_forward_parameters<Parameters>(
        std::make_index_sequence<std::tuple_size_v<Parameters>>{}));
    std::string arguments = custom_op_detail::schema_arguments(qualified_name, Signature::schema_types(), arg_names);
    BoxedOpFn forward = [qualified_name, num_outputs](const std::vector<IValue>& args) {
      autograd::AutogradContext ctx;
      custom_op_detail::WrappedForward run(qualified_name, ctx);
      return run.finish(num_outputs, args, Signature::template call<F>(&ctx, args));
    };
    CustomBackwardFn backward = [num_outputs](autograd::AutogradContext* ctx, const std::vector<Tensor>& grads) {
      auto end = grads.begin() + static_cast<std::ptrdiff_t>(num_outputs);  // the saved tensors get no gradient
      return F::backward(ctx, std::vector<Tensor>(grads.begin(), end));
    };
    return custom_op_detail::define_wrapped_function(qualified_name, arguments, std::move(forward), std::move(backward),
                                                     num_outputs);
  }
}

template <class F>
CustomOp& as_custom_op(const std::string& qualified_name, size_t num_outputs = 1) {
  return as_custom_op<F>(qualified_name, std::vector<std::string>{}, num_outputs);
}

}  // namespace remat
