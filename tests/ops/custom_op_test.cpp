// Tests of ops/custom_op.cpp: custom_op, register_fake, register_autograd, as_custom_op (the
// seed's Function-to-op wrapper, for Functions written with a tensor list and written the
// PyTorch way), the call with positional arguments, and how selective checkpointing treats them.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/matchers.h"
#include "tests/testing/op_counter.h"

using namespace remat;
using remat::testing::CountOps;
using remat::testing::What;

namespace {

int g_my_mul_runs = 0;

// forward: out = a * b
CustomOp& my_mul() {
  static CustomOp& op = [] () -> CustomOp& {
    CustomOp& o = custom_op("remat_test::my_mul", [](const std::vector<Tensor>& in) {
      ++g_my_mul_runs;
      return std::vector<Tensor>{in[0] * in[1]};
    });
    o.register_fake([](const std::vector<Tensor>& in) { return std::vector<Tensor>{empty_like(in[0])}; })
        .register_autograd(
            [](autograd::AutogradContext* ctx, const std::vector<Tensor>& grads) {
              std::vector<Tensor> s = ctx->get_saved_variables();
              return std::vector<Tensor>{grads[0] * s[1], grads[0] * s[0]};
            },
            [](autograd::AutogradContext* ctx, const std::vector<Tensor>& in, const std::vector<Tensor>&) {
              ctx->save_for_backward(in);
            });
    return o;
  }();
  return op;
}

// A legacy Function: forward saves x and its own intermediate sin(x).
struct SinTimesX : autograd::Function<SinTimesX> {
  static std::vector<Tensor> forward(autograd::AutogradContext* ctx, const std::vector<Tensor>& in) {
    Tensor s = in[0].sin();
    ctx->save_for_backward({in[0], s});
    ctx->saved_data["scale"] = 1.0;
    return {s * in[0]};
  }
  static std::vector<Tensor> backward(autograd::AutogradContext* ctx, std::vector<Tensor> grads) {
    // forward: y = sin(x) * x; dy/dx = cos(x) * x + sin(x)
    std::vector<Tensor> saved = ctx->get_saved_variables();
    double scale = ctx->saved_data.at("scale").toDouble();
    return {grads[0] * (saved[0].cos() * saved[0] + saved[1]) * scale};
  }
};

}  // namespace

TEST_CASE("a custom op is one dispatcher op with its own autograd", "[custom_op]") {
  Tensor a = randn({3}, kDouble).requires_grad_();
  Tensor b = randn({3}, kDouble).requires_grad_();
  {
    CountOps ops;
    Tensor y = my_mul()({a, b})[0];
    REQUIRE(ops.counter->count("remat_test::my_mul") == 1);
    REQUIRE(ops.counter->count("aten::mul") == 0);  // opaque: its insides are not seen
    REQUIRE(y.grad_fn()->name() == "MyMulBackward0");
  }
  REQUIRE(autograd::gradcheck([](const std::vector<Tensor>& in) { return my_mul()(in); }, {a, b}));
  REQUIRE(find_op("remat_test::my_mul").schema().str() == "remat_test::my_mul(Tensor[] inputs) -> Tensor[]");
}

TEST_CASE("register_fake runs on the Meta device", "[custom_op]") {
  Tensor a = empty({2, 5}, Device(kMeta)), b = empty({2, 5}, Device(kMeta));
  int64_t before = memory_allocated();
  Tensor y = my_mul()({a, b})[0];
  REQUIRE(y.is_meta());
  REQUIRE(y.sizes() == Shape{2, 5});
  REQUIRE(memory_allocated() == before);
}

TEST_CASE("custom op errors", "[custom_op]") {
  REQUIRE_THROWS_WITH(custom_op("no_namespace", [](const std::vector<Tensor>& in) { return in; }),
                      Catch::Contains("must be qualified as 'namespace::name'"));
  REQUIRE_THROWS_WITH(custom_op("aten::mine", [](const std::vector<Tensor>& in) { return in; }),
                      Catch::Contains("the 'aten' namespace is reserved"));
  my_mul();
  REQUIRE_THROWS_WITH(custom_op("remat_test::my_mul", [](const std::vector<Tensor>& in) { return in; }),
                      Catch::Contains("remat_test::my_mul is already defined"));
  static CustomOp& no_fake = custom_op("remat_test::no_fake", [](const std::vector<Tensor>& in) { return in; });
  REQUIRE_THROWS_WITH(no_fake({empty({2}, Device(kMeta))}), Catch::Contains("has no fake implementation"));
  static CustomOp& no_grad_rule = custom_op("remat_test::no_autograd", [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] * 2.0};
  });
  Tensor x = randn({2}).requires_grad_();
  Tensor y = no_grad_rule({x})[0];
  REQUIRE_THROWS_WITH(y.sum().backward(),
                      Catch::Contains("the derivative for 'remat_test::no_autograd' is not implemented"));
}

TEST_CASE("a custom op in the SAC save list runs exactly once across forward and backward", "[custom_op][sac]") {
  Tensor a = randn({4}).requires_grad_();
  Tensor b = randn({4}).requires_grad_();
  g_my_mul_runs = 0;
  CheckpointOptions o;
  o.context_fn = [] { return create_selective_checkpoint_contexts({"remat_test::my_mul"}); };
  Tensor loss = checkpoint([&](const Tensor& x) { return my_mul()({x.sin(), b})[0].cos().sum(); }, a, o);
  loss.backward();
  REQUIRE(g_my_mul_runs == 1);
  REQUIRE(allclose(b.grad(), a.detach().sin() * -(a.detach().sin() * b.detach()).sin()));

  // Not in the save list: it runs again in the recomputation.
  g_my_mul_runs = 0;
  a.set_grad(Tensor());
  b.set_grad(Tensor());
  CheckpointOptions vanilla;
  vanilla.early_stop = false;
  checkpoint([&](const Tensor& x) { return my_mul()({x.sin(), b})[0].cos().sum(); }, a, vanilla).backward();
  REQUIRE(g_my_mul_runs == 2);
}

TEST_CASE("as_custom_op: a legacy Function as one op, each saved tensor packed once", "[custom_op]") {
  static CustomOp& wrapped = as_custom_op<SinTimesX>("remat_test::sin_times_x");
  Tensor x = randn({5}, kDouble).requires_grad_();
  int packs = 0, unpacks = 0;
  Tensor y;
  {
    autograd::saved_tensors_hooks count(
        [&](const Tensor& t) -> std::any {
          ++packs;
          return t;
        },
        [&](const std::any& p) {
          ++unpacks;
          return std::any_cast<Tensor>(p);
        });
    CountOps ops;
    y = wrapped({x})[0];
    REQUIRE(ops.counter->count("remat_test::sin_times_x") == 1);
    REQUIRE(ops.counter->count("aten::sin") == 0);
  }
  REQUIRE(packs == 2);  // x and sin(x), once each (no second pack/unpack round trip)
  y.sum().backward();
  REQUIRE(unpacks == 2);
  Tensor xd = x.detach();
  REQUIRE(allclose(x.grad(), xd.cos() * xd + xd.sin(), 1e-12, 1e-12));
  // The wrapped op returns the Function's saved tensors as extra outputs.
  REQUIRE(wrapped({x}).size() == 3);
  REQUIRE(autograd::gradcheck([](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{wrapped(in)[0]};
  }, {x}));
}

namespace {

using autograd::AutogradContext;

// Functions written the PyTorch way: forward takes Tensors and values, saves with
// save_for_backward and saved_data. `Form` picks what backward returns (each form is one op).
enum class GradForm { PerTensor, PerArgument, ValueForNonTensor, TooFew };
int g_mul_scaled_forwards = 0;

template <GradForm Form>
struct MulScaledT : autograd::Function<MulScaledT<Form>> {
  // forward: out = x * y * alpha
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x, const Tensor& y, double alpha) {
    ++g_mul_scaled_forwards;
    ctx->save_for_backward({x, y});
    ctx->saved_data["alpha"] = alpha;
    return {x * y * alpha};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
    std::vector<Tensor> s = ctx->get_saved_variables();
    double alpha = ctx->saved_data.at("alpha").toDouble();
    Tensor gx = grads[0] * s[1] * alpha, gy = grads[0] * s[0] * alpha;
    switch (Form) {
      case GradForm::PerTensor: return {gx, gy};
      case GradForm::PerArgument: return {gx, gy, Tensor()};
      case GradForm::ValueForNonTensor: return {gx, gy, gx};
      case GradForm::TooFew: return {gx};
    }
    return {};
  }
};
using MulScaled = MulScaledT<GradForm::PerTensor>;

CustomOp& mul_scaled() {
  static CustomOp& op = as_custom_op<MulScaled>("remat_test::mul_scaled", {"x", "y", "alpha"});
  return op;
}

// Every parameter type a wrapped forward may take, in every accepted form.
struct AllTypes : autograd::Function<AllTypes> {
  // forward: out = reshape(x, shape) * k * scale + sum(rest) (+ 1 if flag); mode "neg" negates
  static std::vector<Tensor> forward(AutogradContext* ctx, const Tensor& x, int64_t k, const bool flag, Shape shape,
                                     const std::string& mode, std::vector<Tensor>&& rest, double scale) {
    ctx->saved_data["k"] = k;
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["neg"] = mode == "neg";
    ctx->saved_data["sizes"] = x.sizes();
    Tensor out = x.reshape(shape) * (static_cast<double>(k) * scale * (mode == "neg" ? -1.0 : 1.0));
    for (const Tensor& r : rest) out = out + r;
    return {flag ? out + 1.0 : out};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
    double factor = static_cast<double>(ctx->saved_data.at("k").toInt()) * ctx->saved_data.at("scale").toDouble() *
                    (ctx->saved_data.at("neg").toBool() ? -1.0 : 1.0);
    // one gradient per Tensor input: x, rest[0], rest[1]
    return {grads[0].reshape(ctx->saved_data.at("sizes").toIntVector()) * factor, grads[0], grads[0]};
  }
};

// Saves each input only when the other's gradient is needed (as PyTorch Functions do with
// needs_input_grad), and an intermediate.
struct MulThenSin : autograd::Function<MulThenSin> {
  // forward: out = sin(x * w)
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x, Tensor w) {
    Tensor p = x * w;
    ctx->save_for_backward({ctx->needs_input_grad(1) ? x : Tensor(), ctx->needs_input_grad(0) ? w : Tensor(), p});
    return {p.sin()};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
    // d out / dx = cos(x w) w ; d out / dw = cos(x w) x
    std::vector<Tensor> s = ctx->get_saved_variables();
    Tensor g = grads[0] * s[2].cos();
    return {ctx->needs_input_grad(0) ? g * s[1] : Tensor(), ctx->needs_input_grad(1) ? g * s[0] : Tensor()};
  }
};

// Two outputs, the second marked non-differentiable, and undefined gradients left undefined.
struct ValueAndMask : autograd::Function<ValueAndMask> {
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x) {
    Tensor mask = (x.relu() / (x.abs() + 1e-30));  // 1 where x > 0, else 0
    ctx->mark_non_differentiable({mask});
    ctx->set_materialize_grads(false);
    ctx->save_for_backward({mask});
    return {x * mask, mask};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
    REMAT_CHECK(grads.size() == 2 && !grads[1].defined(), "ValueAndMask: expected an undefined gradient for the mask");
    return {grads[0] * ctx->get_saved_variables()[0]};
  }
};

struct ReturnsTwo : autograd::Function<ReturnsTwo> {
  static std::vector<Tensor> forward(AutogradContext*, Tensor x) { return {x * 2.0, x * 3.0}; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> grads) { return {grads[0]}; }
};

struct DirtiesInput : autograd::Function<DirtiesInput> {
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x) {
    ctx->mark_dirty({x});
    return {x};
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> grads) { return grads; }
};

// Its forward calls another wrapped op: that inner call is below autograd (nothing recorded).
int g_inner_saved_defined = -1;
CustomOp& mul_then_sin() {
  static CustomOp& op = as_custom_op<MulThenSin>("remat_test::mul_then_sin");
  return op;
}
struct CallsWrappedOp : autograd::Function<CallsWrappedOp> {
  // forward: out = sin(x * x) * scale
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x, double scale) {
    std::vector<Tensor> inner = mul_then_sin()(x, x);  // output, then MulThenSin's saved x, w, x * w
    g_inner_saved_defined = 0;
    for (size_t i = 1; i < inner.size(); ++i) g_inner_saved_defined += inner[i].defined() ? 1 : 0;
    ctx->save_for_backward({x});
    ctx->saved_data["scale"] = scale;
    return {inner[0] * scale};
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
    Tensor x = ctx->get_saved_variables()[0];
    return {grads[0] * (x * x).cos() * x * 2.0 * ctx->saved_data.at("scale").toDouble()};
  }
};

// Records the arguments a dispatch mode sees for one op.
class ArgumentRecorder : public DispatchMode {
 public:
  explicit ArgumentRecorder(std::string op) : op_(std::move(op)) {}
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    if (op.name() == op_) seen = args;
    return op.call(args);
  }
  std::vector<IValue> seen;

 private:
  std::string op_;
};

}  // namespace

TEST_CASE("as_custom_op: a Function written the PyTorch way is one op with one schema argument per parameter",
          "[custom_op]") {
  Tensor x = randn({3}, kDouble).requires_grad_();
  Tensor y = randn({3}, kDouble).requires_grad_();
  REQUIRE(mul_scaled().handle().schema().str() ==
          "remat_test::mul_scaled(Tensor x, Tensor y, float alpha) -> Tensor[]");
  auto recorder = std::make_shared<ArgumentRecorder>("remat_test::mul_scaled");
  Tensor z;
  {
    DispatchModeGuard guard(recorder);
    CountOps ops;
    z = mul_scaled()(x, y, 0.5)[0];  // as torch.ops.remat_test.mul_scaled(x, y, 0.5)
    REQUIRE(ops.counter->count("remat_test::mul_scaled") == 1);
    REQUIRE(ops.counter->count("aten::mul") == 0);  // opaque: its insides are not seen
  }
  REQUIRE(recorder->seen.size() == 3);
  REQUIRE(recorder->seen[0].isTensor());
  REQUIRE(recorder->seen[1].isTensor());
  REQUIRE(recorder->seen[2].isDouble());
  REQUIRE(recorder->seen[2].toDouble() == 0.5);
  REQUIRE(z.grad_fn()->name() == "MulScaledBackward0");
  Tensor xd = x.detach(), yd = y.detach();
  REQUIRE(equal(z.detach(), xd * yd * 0.5));
  z.sum().backward();
  REQUIRE(allclose(x.grad(), yd * 0.5, 1e-12, 1e-12));
  REQUIRE(allclose(y.grad(), xd * 0.5, 1e-12, 1e-12));
  // An int where the schema says float is accepted, as in PyTorch.
  REQUIRE(equal(mul_scaled()(xd, yd, 2)[0], xd * yd * 2.0));
}

TEST_CASE("as_custom_op: gradcheck on a wrapped PyTorch-form Function", "[custom_op]") {
  Tensor x = randn({2, 3}, kDouble).requires_grad_();
  Tensor y = randn({2, 3}, kDouble).requires_grad_();
  REQUIRE(autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{mul_scaled()(in[0], in[1], -1.5)[0]}; }, {x, y}));
  static CustomOp& all = as_custom_op<AllTypes>("remat_test::all_types_gradcheck");
  Tensor r0 = randn({3, 2}, kDouble).requires_grad_();
  Tensor r1 = randn({3, 2}, kDouble).requires_grad_();
  REQUIRE(autograd::gradcheck(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{all(in[0], 2, true, Shape{3, 2}, "neg", std::vector<Tensor>{in[1], in[2]}, 0.25)[0]};
      },
      {x, r0, r1}));
}

TEST_CASE("as_custom_op: every parameter type becomes its schema type, and the call boxes each value", "[custom_op]") {
  static CustomOp& all = as_custom_op<AllTypes>("remat_test::all_types");
  REQUIRE(all.handle().schema().str() ==
          "remat_test::all_types(Tensor arg0, int arg1, bool arg2, int[] arg3, str arg4, Tensor[] arg5, float arg6) -> "
          "Tensor[]");
  Tensor x = randn({6}).requires_grad_();
  Tensor r0 = randn({2, 3}).requires_grad_();
  Tensor r1 = randn({2, 3});
  auto recorder = std::make_shared<ArgumentRecorder>("remat_test::all_types");
  Tensor out;
  {
    DispatchModeGuard guard(recorder);
    std::string mode = "neg";
    out = all(x, 3, false, Shape{2, 3}, mode, std::vector<Tensor>{r0, r1}, 0.5f)[0];
  }
  const std::vector<IValue>& a = recorder->seen;
  REQUIRE(a.size() == 7);
  REQUIRE(a[0].isTensor());
  REQUIRE((a[1].isInt() && a[1].toInt() == 3));
  REQUIRE((a[2].isBool() && !a[2].toBool()));
  REQUIRE((a[3].isIntList() && a[3].toIntVector() == Shape{2, 3}));
  REQUIRE((a[4].isString() && a[4].toStringRef() == "neg"));
  REQUIRE((a[5].isTensorList() && a[5].toTensorVector().size() == 2));
  REQUIRE((a[6].isDouble() && a[6].toDouble() == 0.5));
  REQUIRE(equal(out.detach(), x.detach().reshape({2, 3}) * -1.5 + r0.detach() + r1));
  out.sum().backward();
  REQUIRE(allclose(x.grad(), full({6}, -1.5)));
  REQUIRE(allclose(r0.grad(), ones({2, 3})));
  REQUIRE_FALSE(r1.grad().defined());  // r1 needs no gradient
}

TEST_CASE("as_custom_op: parameter types checked at compile time", "[custom_op]") {
  using custom_op_detail::is_forward_parameter_v;
  STATIC_REQUIRE(is_forward_parameter_v<Tensor>);
  STATIC_REQUIRE(is_forward_parameter_v<const Tensor&>);
  STATIC_REQUIRE(is_forward_parameter_v<Tensor&&>);
  STATIC_REQUIRE(is_forward_parameter_v<const std::vector<Tensor>&>);
  STATIC_REQUIRE(is_forward_parameter_v<double>);
  STATIC_REQUIRE(is_forward_parameter_v<const int64_t>);
  STATIC_REQUIRE(is_forward_parameter_v<bool>);
  STATIC_REQUIRE(is_forward_parameter_v<const Shape&>);
  STATIC_REQUIRE(is_forward_parameter_v<std::string>);
  // Each of these fails as_custom_op<F>'s static_assert with a message naming what to use instead.
  STATIC_REQUIRE_FALSE(is_forward_parameter_v<Tensor&>);
  STATIC_REQUIRE_FALSE(is_forward_parameter_v<float>);
  STATIC_REQUIRE_FALSE(is_forward_parameter_v<int>);
  STATIC_REQUIRE_FALSE(is_forward_parameter_v<const Tensor*>);
  STATIC_REQUIRE_FALSE(is_forward_parameter_v<std::vector<double>>);
}

TEST_CASE("as_custom_op: each tensor a PyTorch-form Function saves is packed once and unpacked once", "[custom_op]") {
  CustomOp& op = mul_then_sin();
  for (bool w_requires_grad : {true, false}) {
    Tensor x = randn({4}, kDouble).requires_grad_();
    Tensor w = randn({4}, kDouble).requires_grad_(w_requires_grad);
    int packs = 0, unpacks = 0;
    Tensor y;
    {
      autograd::saved_tensors_hooks count(
          [&](const Tensor& t) -> std::any {
            packs += t.defined() ? 1 : 0;
            return t;
          },
          [&](const std::any& p) {
            Tensor t = std::any_cast<Tensor>(p);
            unpacks += t.defined() ? 1 : 0;
            return t;
          });
      y = op(x, w)[0];
      y.sum().backward();
    }
    // x * w and the input backward reads: w for x's gradient, x too when w needs one.
    REQUIRE(packs == (w_requires_grad ? 3 : 2));
    REQUIRE(unpacks == packs);
    Tensor xd = x.detach(), wd = w.detach();
    REQUIRE(allclose(x.grad(), (xd * wd).cos() * wd, 1e-12, 1e-12));
    REQUIRE(w.grad().defined() == w_requires_grad);
  }
}

TEST_CASE("the vector call gives each tensor to one Tensor argument of a wrapped PyTorch-form Function",
          "[custom_op]") {
  CustomOp& op = mul_then_sin();
  REQUIRE(op.handle().schema().str() == "remat_test::mul_then_sin(Tensor arg0, Tensor arg1) -> Tensor[]");
  Tensor x = randn({4}, kDouble).requires_grad_();
  Tensor w = randn({4}, kDouble).requires_grad_();
  auto recorder = std::make_shared<ArgumentRecorder>("remat_test::mul_then_sin");
  Tensor y;
  {
    DispatchModeGuard guard(recorder);
    y = op({x, w})[0];  // as op(x, w)
  }
  REQUIRE(recorder->seen.size() == 2);
  REQUIRE(recorder->seen[0].isTensor());
  REQUIRE(recorder->seen[0].toTensor().is_same(x));
  REQUIRE(recorder->seen[1].isTensor());
  REQUIRE(recorder->seen[1].toTensor().is_same(w));
  Tensor xd = x.detach(), wd = w.detach();
  REQUIRE(equal(y.detach(), op(xd, wd)[0]));
  y.sum().backward();
  REQUIRE(allclose(x.grad(), (xd * wd).cos() * wd, 1e-12, 1e-12));
  REQUIRE(allclose(w.grad(), (xd * wd).cos() * xd, 1e-12, 1e-12));
  // A Tensor[] first argument (a legacy Function's, custom_op's) still takes the whole list.
  static CustomOp& legacy = as_custom_op<SinTimesX>("remat_test::sin_times_x_vector_call");
  REQUIRE(legacy.handle().schema().arguments()[0].type == "Tensor[]");
  REQUIRE(allclose(legacy({xd})[0], xd.sin() * xd, 1e-12, 1e-12));
}

TEST_CASE("as_custom_op: mark_non_differentiable and set_materialize_grads carry over from forward", "[custom_op]") {
  static CustomOp& op = as_custom_op<ValueAndMask>("remat_test::value_and_mask", 2);
  Tensor x = from_vector({-1.0, 2.0, -3.0, 4.0}, {4}, kDouble).requires_grad_();
  std::vector<Tensor> out = op(x);
  REQUIRE(out.size() == 3);  // value, mask, and the saved mask
  REQUIRE(out[0].requires_grad());
  REQUIRE_FALSE(out[1].requires_grad());
  out[0].sum().backward();  // ValueAndMask::backward checks the mask's gradient stays undefined
  REQUIRE(equal(x.grad(), from_vector({0.0, 1.0, 0.0, 1.0}, {4}, kDouble)));
}

TEST_CASE("as_custom_op: a wrapped Function runs its own forward on the Meta device", "[custom_op]") {
  Tensor x = empty({2, 5}, Device(kMeta)).requires_grad_();
  Tensor y = empty({2, 5}, Device(kMeta));
  int64_t before = memory_allocated();
  Tensor z = mul_scaled()(x, y, 0.5)[0];
  REQUIRE(z.is_meta());
  REQUIRE(z.sizes() == Shape{2, 5});
  REQUIRE(z.grad_fn()->name() == "MulScaledBackward0");
  REQUIRE(memory_allocated() == before);
}

TEST_CASE("as_custom_op under SAC: kept as one op by a MUST_SAVE policy, its forward not rerun", "[custom_op][sac]") {
  Tensor a = randn({4}, kDouble).requires_grad_();
  Tensor b = randn({4}, kDouble).requires_grad_();
  auto region = [&](const Tensor& x, Tensor* inner) {  // *inner: the op's output in the first run (forward)
    Tensor out = mul_scaled()(x.sin(), b, 0.5)[0];
    if (!inner->defined()) *inner = out;
    return out.cos().sum();
  };
  // The reference: no checkpointing.
  Tensor inner;
  region(a, &inner).backward();
  Tensor ref_a = a.grad(), ref_b = b.grad();

  for (CheckpointPolicy keep : {CheckpointPolicy::MUST_SAVE, CheckpointPolicy::PREFER_RECOMPUTE}) {
    a.set_grad(Tensor());
    b.set_grad(Tensor());
    int asked = 0;
    std::vector<IValue> policy_args;
    CheckpointOptions o;
    o.context_fn = [&] {
      return create_selective_checkpoint_contexts(
          PolicyFn([&](const SelectiveCheckpointContext&, const OperatorHandle& op, const std::vector<IValue>& args) {
            if (op.name() != "remat_test::mul_scaled") return CheckpointPolicy::PREFER_RECOMPUTE;
            ++asked;
            policy_args = args;
            return keep;
          }));
    };
    g_mul_scaled_forwards = 0;
    inner = Tensor();
    Tensor loss = checkpoint([&](const Tensor& x) { return region(x, &inner); }, a, o);
    auto node = inner.grad_fn();
    loss.backward();
    REQUIRE(asked == 1);  // one op, one decision
    REQUIRE(policy_args.size() == 3);
    REQUIRE((policy_args[2].isDouble() && policy_args[2].toDouble() == 0.5));
    REQUIRE(g_mul_scaled_forwards == (keep == CheckpointPolicy::MUST_SAVE ? 1 : 2));
    REQUIRE(equal(a.grad(), ref_a));
    REQUIRE(equal(b.grad(), ref_b));
    REQUIRE(inner.grad_fn() == node);  // the recompute did not rewire the forward's output
  }
}

TEST_CASE("as_custom_op and the call with positional arguments: errors", "[custom_op]") {
  Tensor x = randn({3}).requires_grad_();
  Tensor y = randn({3});
  REQUIRE_THROWS_MATCHES(mul_scaled()(x, y, "half"), Error,
                         What(Catch::Contains("remat_test::mul_scaled(): expected argument 'alpha' (position 2) to be "
                                              "of type float but got str")));
  REQUIRE_THROWS_MATCHES(mul_scaled()(x, y), Error,
                         What(Catch::Contains("remat_test::mul_scaled() is missing value for argument 'alpha'")));
  REQUIRE_THROWS_MATCHES(mul_scaled()(x, y, 0.5, 1.0), Error,
                         What(Catch::Contains("remat_test::mul_scaled() takes at most 3 arguments but 4 were given")));
  // The vector call passes tensors only: the float argument is missing, as in mul_scaled()(x, y).
  REQUIRE_THROWS_MATCHES(mul_scaled()({x, y}), Error,
                         What(Catch::Contains("remat_test::mul_scaled() is missing value for argument 'alpha'")));
  REQUIRE_THROWS_MATCHES(mul_scaled()({x, y, y}), Error,
                         What(Catch::Contains("remat_test::mul_scaled(): expected argument 'alpha' (position 2) to be "
                                              "of type float but got Tensor")));
  REQUIRE_THROWS_MATCHES(mul_then_sin()({x, y, y}), Error,
                         What(Catch::Contains("remat_test::mul_then_sin() takes at most 2 arguments but 3 were given")));
  REQUIRE_THROWS_MATCHES(mul_scaled()(std::vector<Tensor>{x, y}, y, 0.5), Error,
                         What(Catch::Contains("expected argument 'x' (position 0) to be of type Tensor but got "
                                              "Tensor[]")));

  REQUIRE_THROWS_MATCHES(as_custom_op<MulScaled>("remat_test::named_wrong", {"x", "y"}), Error,
                         What(Catch::Contains("as_custom_op: remat_test::named_wrong: 2 argument names given for the 3 "
                                              "parameters of forward after its context")));
  static CustomOp& two = as_custom_op<ReturnsTwo>("remat_test::returns_two");
  REQUIRE_THROWS_MATCHES(two(x), Error,
                         What(Catch::Contains("as_custom_op: remat_test::returns_two: forward returned 2 outputs, "
                                              "expected 1 (pass num_outputs to as_custom_op)")));
  static CustomOp& dirty = as_custom_op<DirtiesInput>("remat_test::dirties_input");
  REQUIRE_THROWS_MATCHES(dirty(x.detach()), Error,
                         What(Catch::Contains("as_custom_op: remat_test::dirties_input: forward marked its input "
                                              "'arg0' dirty; an in-place Function cannot be wrapped as a custom op")));
}

TEST_CASE("as_custom_op: backward returns one gradient per Tensor argument or per argument", "[custom_op]") {
  static CustomOp& per_argument =
      as_custom_op<MulScaledT<GradForm::PerArgument>>("remat_test::mul_scaled_per_argument", {"x", "y", "alpha"});
  static CustomOp& value_for_non_tensor = as_custom_op<MulScaledT<GradForm::ValueForNonTensor>>(
      "remat_test::mul_scaled_value_for_non_tensor", {"x", "y", "alpha"});
  static CustomOp& too_few = as_custom_op<MulScaledT<GradForm::TooFew>>("remat_test::mul_scaled_too_few");
  Tensor x = randn({3}, kDouble).requires_grad_();
  Tensor y = randn({3}, kDouble).requires_grad_();
  per_argument(x, y, 2.0)[0].sum().backward();
  REQUIRE(allclose(x.grad(), y.detach() * 2.0));
  REQUIRE(allclose(y.grad(), x.detach() * 2.0));
  REQUIRE_THROWS_MATCHES(value_for_non_tensor(x, y, 2.0)[0].sum().backward(), Error,
                         What(Catch::Contains("function MulScaledValueForNonTensorBackward0 returned a gradient "
                                              "different than None at position 3 (argument 'alpha'), but the "
                                              "corresponding forward input was not a Variable")));
  REQUIRE_THROWS_MATCHES(too_few(x, y, 2.0)[0].sum().backward(), Error,
                         What(Catch::Contains("The backward formula for remat_test::mul_scaled_too_few returned an "
                                              "incorrect number of gradients (expected 2 or 3, got 1)")));
}

TEST_CASE("the call with positional arguments boxes a tensor list as the list call does", "[custom_op]") {
  Tensor a = randn({3}), b = randn({3});
  std::vector<Tensor> in{a, b};
  REQUIRE(equal(my_mul()(in)[0], a * b));
  REQUIRE(equal(my_mul()(std::vector<Tensor>{a, b})[0], a * b));  // the variadic form, one Tensor[] argument
}

TEST_CASE("as_custom_op: a wrapped Function whose forward calls another wrapped op", "[custom_op]") {
  static CustomOp& outer = as_custom_op<CallsWrappedOp>("remat_test::calls_wrapped_op");
  Tensor x = randn({3}, kDouble).requires_grad_();
  Tensor y;
  {
    CountOps ops;
    y = outer(x, 3.0)[0];
    REQUIRE(ops.counter->count("remat_test::calls_wrapped_op") == 1);
    REQUIRE(ops.counter->count("remat_test::mul_then_sin") == 0);  // inside the opaque op
  }
  // The inner call records no node, so its needs_input_grad is false for both inputs: it saved
  // x * w only, and the outer call's context (saved_data) is its own.
  REQUIRE(g_inner_saved_defined == 1);
  y.sum().backward();
  Tensor xd = x.detach();
  REQUIRE(allclose(x.grad(), (xd * xd).cos() * xd * 6.0, 1e-12, 1e-12));
}

namespace {
// A mode that answers every call of one op with a Tensor where the schema says Tensor[].
class ReturnsTensor : public DispatchMode {
 public:
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    if (op.name() == "remat_test::my_mul") return {IValue(args[0].toTensorVector()[0])};
    return op.call(args);
  }
};
}  // namespace

TEST_CASE("register_fake and the call: errors", "[custom_op]") {
  REQUIRE_THROWS_MATCHES(my_mul().register_fake(OpFn()), Error,
                         What(Catch::Contains("register_fake: remat_test::my_mul: empty function")));
  REQUIRE_THROWS_MATCHES(my_mul().register_fake(BoxedOpFn()), Error,
                         What(Catch::Contains("register_fake: remat_test::my_mul: empty function")));
  Tensor a = randn({2}), b = randn({2});
  DispatchModeGuard guard(std::make_shared<ReturnsTensor>());
  REQUIRE_THROWS_MATCHES(my_mul()({a, b}), Error,
                         What(Catch::Contains("custom op remat_test::my_mul: expected a Tensor[] return, got Tensor")));
}
