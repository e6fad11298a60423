// Mirrors test/test_autograd.py and test/cpp/api/autograd.cpp (custom Function tests).
// Tests engine/autograd/custom_function.cpp (Function<T>, AutogradContext, CppNode, wrap_outputs):
// the semantics of test_autograd.py's custom Function tests.
#include <catch2/catch.hpp>

#include <cmath>

#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::autograd::AutogradContext;
using remat::autograd::Function;
using remat::testing::f64;
using remat::testing::values;

namespace {

bool g_forward_grad_enabled = true;
bool g_forward_input_requires_grad = false;

// y = x * scale, scale stored in saved_data; saves x to check what backward gets back.
struct ScaleBy : Function<ScaleBy> {
  static Tensor forward(AutogradContext* ctx, Tensor x, double scale) {
    g_forward_grad_enabled = autograd::is_grad_enabled();
    g_forward_input_requires_grad = x.requires_grad();
    ctx->saved_data["scale"] = scale;
    ctx->save_for_backward({x});
    Tensor y = x * scale;
    REMAT_CHECK(!y.requires_grad(), "forward runs under no-grad");
    return y;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
    // forward: y = x * scale
    double scale = ctx->saved_data["scale"].toDouble();
    REMAT_CHECK(ctx->get_saved_variables().size() == 1, "one saved tensor");
    return {grads[0] * scale, Tensor()};  // one per forward argument: the double's is dropped
  }
};

// out = a * b; records which inputs backward was asked for.
std::vector<bool> g_needs;
struct MulFn : Function<MulFn> {
  static Tensor forward(AutogradContext* ctx, Tensor a, Tensor b) {
    ctx->save_for_backward({a, b});
    return a * b;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
    // forward: out = a * b
    g_needs = {ctx->needs_input_grad(0), ctx->needs_input_grad(1)};
    std::vector<Tensor> s = ctx->get_saved_variables();
    return {ctx->needs_input_grad(0) ? grads[0] * s[1] : Tensor(),
            ctx->needs_input_grad(1) ? grads[0] * s[0] : Tensor()};
  }
};

// Doubles x in place and says so.
struct DoubleInPlace : Function<DoubleInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2.0);
    ctx->mark_dirty({x});
    return x;
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> grads) {
    // forward: x = 2 * x (in place)
    return {grads[0] * 2.0};
  }
};

// Returns (x + 1, x > 0 as a float mask): the mask is non-differentiable.
struct WithMask : Function<WithMask> {
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x) {
    Tensor mask = relu(x) / x;  // 1 where x > 0 (x != 0 in the tests)
    ctx->mark_non_differentiable({mask});
    return {x + 1.0, mask};
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> grads) {
    // forward: out0 = x + 1; out1 has no gradient
    return {grads[0]};
  }
};

// Two outputs (x * 2, x * 3); records whether backward got a defined gradient for each.
std::vector<bool> g_defined;
std::vector<std::vector<double>> g_grads_seen;
struct TwoOutputs : Function<TwoOutputs> {
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x, bool materialize) {
    ctx->set_materialize_grads(materialize);
    return {x * 2.0, x * 3.0};
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> grads) {
    // forward: out0 = 2x, out1 = 3x
    g_defined = {grads[0].defined(), grads[1].defined()};
    g_grads_seen.clear();
    for (const Tensor& g : grads) g_grads_seen.push_back(g.defined() ? values(g) : std::vector<double>{});
    Tensor gx = grads[0].defined() ? grads[0] * 2.0 : Tensor();
    if (grads[1].defined()) gx = gx.defined() ? gx + grads[1] * 3.0 : grads[1] * 3.0;
    return {gx, Tensor()};
  }
};

// Returns its input unchanged.
struct Identity : Function<Identity> {
  static Tensor forward(AutogradContext*, Tensor x) { return x; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> grads) {
    // forward: y = x
    return {grads[0] * 10.0};  // a recognisable gradient
  }
};

// y = exp(x), saving its output.
struct ExpFn : Function<ExpFn> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    Tensor y = x.exp();
    ctx->save_for_backward({y});
    return y;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
    // forward: y = exp(x)
    return {grads[0] * ctx->get_saved_variables()[0]};
  }
};

struct WrongCount : Function<WrongCount> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 1.0; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> grads) {
    return {grads[0], grads[0], grads[0]};
  }
};

struct WrongShape : Function<WrongShape> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 1.0; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor>) { return {ones({5}, kDouble)}; }
};

struct WrongRank : Function<WrongRank> {
  static Tensor forward(AutogradContext*, Tensor x) { return x * 1.0; }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor>) { return {ones({}, kDouble)}; }
};

struct DirtyNonInput : Function<DirtyNonInput> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    Tensor y = x * 1.0;
    ctx->mark_dirty({y});
    return y;
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> grads) { return grads; }
};

}  // namespace

TEST_CASE("Function: forward runs under no-grad; saved_data and saved tensors reach backward", "[custom_function]") {
  Tensor x = from_vector({1, 2, 3}, {3}, f64(true));
  Tensor y = ScaleBy::apply(x, 4.0);
  REQUIRE_FALSE(g_forward_grad_enabled);
  REQUIRE(g_forward_input_requires_grad);  // the input itself still requires grad
  REQUIRE(autograd::is_grad_enabled());    // restored
  REQUIRE(y.requires_grad());
  REQUIRE(values(y) == std::vector<double>{4, 8, 12});
  REQUIRE(y.grad_fn()->name() == "ScaleByBackward");
  y.sum().backward();
  REQUIRE(values(x.grad()) == std::vector<double>{4, 4, 4});
}

TEST_CASE("Function: needs_input_grad follows requires_grad and grad()'s inputs", "[custom_function]") {
  Tensor a = from_vector({1, 2}, {2}, f64(true));
  Tensor b = from_vector({3, 4}, {2}, kDouble);
  MulFn::apply(a, b).sum().backward();
  REQUIRE(g_needs == std::vector<bool>{true, false});
  REQUIRE(values(a.grad()) == std::vector<double>{3, 4});

  Tensor c = from_vector({3, 4}, {2}, f64(true));
  Tensor out = MulFn::apply(a, c).sum();
  std::vector<Tensor> g = autograd::grad({out}, {c});  // only c is asked for
  REQUIRE(g_needs == std::vector<bool>{false, true});
  REQUIRE(values(g[0]) == std::vector<double>{1, 2});
}

TEST_CASE("Function: mark_dirty moves an in-place input's history to the node", "[custom_function]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor h = x * 3.0;
  Tensor out = DoubleInPlace::apply(h);
  REQUIRE(out.is_same(h));  // the dirty input itself is returned
  REQUIRE(h.grad_fn()->name() == "DoubleInPlaceBackward");
  REQUIRE(h._version() == 1);
  REQUIRE(values(h) == std::vector<double>{6, 12});
  h.sum().backward();
  REQUIRE(values(x.grad()) == std::vector<double>{6, 6});  // 2 * 3

  Tensor leaf = from_vector({1, 2}, {2}, f64(true));
  REQUIRE_THROWS_WITH(DoubleInPlace::apply(leaf),
                      "a leaf Variable that requires grad has been used in an in-place operation.");
  REQUIRE_THROWS_WITH(DirtyNonInput::apply(h), "mark_dirty: a tensor marked dirty must be an input of forward");
}

TEST_CASE("Function: mark_non_differentiable outputs need no grad", "[custom_function]") {
  Tensor x = from_vector({-1, 2}, {2}, f64(true));
  std::vector<Tensor> outs = WithMask::apply(x);
  REQUIRE(outs[0].requires_grad());
  REQUIRE_FALSE(outs[1].requires_grad());
  REQUIRE(outs[1].grad_fn() == nullptr);
  REQUIRE(values(outs[1]) == std::vector<double>{0, 1});
  (outs[0] * outs[1]).sum().backward();
  REQUIRE(values(x.grad()) == std::vector<double>{0, 1});
}

TEST_CASE("Function: undefined gradients are materialized as zeros unless turned off", "[custom_function]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  std::vector<Tensor> outs = TwoOutputs::apply(x, true);
  REQUIRE(outs[0].output_nr() == 0);
  REQUIRE(outs[1].output_nr() == 1);
  REQUIRE(outs[0].grad_fn() == outs[1].grad_fn());
  REQUIRE(outs[0].grad_fn()->num_inputs() == 2);
  outs[0].sum().backward();  // out1 gets no gradient
  REQUIRE(g_defined == std::vector<bool>{true, true});
  REQUIRE(g_grads_seen[1] == std::vector<double>{0, 0});
  REQUIRE(values(x.grad()) == std::vector<double>{2, 2});

  Tensor z = from_vector({1, 2}, {2}, f64(true));
  std::vector<Tensor> outs2 = TwoOutputs::apply(z, false);
  outs2[1].sum().backward();
  REQUIRE(g_defined == std::vector<bool>{false, true});
  REQUIRE(values(z.grad()) == std::vector<double>{3, 3});
}

TEST_CASE("Function: returning an input gives a new tensor connected to the node", "[custom_function]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor h = x * 1.0;
  auto h_fn = h.grad_fn();
  Tensor y = Identity::apply(h);
  REQUIRE_FALSE(y.is_same(h));
  REQUIRE(y.is_alias_of(h));
  REQUIRE(h.grad_fn() == h_fn);  // the input keeps its own history
  REQUIRE(y.grad_fn()->name() == "IdentityBackward");
  y.sum().backward();
  REQUIRE(values(x.grad()) == std::vector<double>{10, 10});
  // Without grad the input is still returned as a fresh handle.
  Tensor plain = ones({2}, kDouble);
  Tensor p = Identity::apply(plain);
  REQUIRE_FALSE(p.is_same(plain));
  REQUIRE(p.is_alias_of(plain));
  REQUIRE_FALSE(p.requires_grad());
}

TEST_CASE("Function: with no input requiring grad nothing is recorded", "[custom_function]") {
  Tensor x = from_vector({1, 2}, {2}, kDouble);
  Tensor y = ScaleBy::apply(x, 2.0);
  REQUIRE_FALSE(y.requires_grad());
  REQUIRE(y.grad_fn() == nullptr);
  Tensor z = from_vector({1, 2}, {2}, f64(true));
  Tensor w;
  {
    autograd::NoGradGuard no_grad;
    w = ScaleBy::apply(z, 2.0);
  }
  REQUIRE_FALSE(w.requires_grad());
}

TEST_CASE("Function: saved tensors are freed by backward", "[custom_function]") {
  struct Peek : Function<Peek> {
    static Tensor forward(AutogradContext* ctx, Tensor x) {
      ctx->save_for_backward({x});
      return x * 2.0;
    }
    static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
      ctx->get_saved_variables();
      return {grads[0] * 2.0};
    }
  };
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  Tensor loss = Peek::apply(x).sum();
  loss.backward({}, /*retain_graph=*/true);
  loss.backward();
  REQUIRE(values(x.grad()) == std::vector<double>{4, 4});
  REQUIRE_THROWS_WITH(loss.backward(), Catch::StartsWith("Trying to backward through the graph a second time"));
}

TEST_CASE("Function: saving an output makes no reference cycle", "[custom_function]") {
  const int64_t baseline = autograd::Node::live_count();
  std::weak_ptr<autograd::Node> node;
  {
    Tensor x = from_vector({0.5, 1}, {2}, f64(true));
    Tensor y = ExpFn::apply(x);
    node = y.grad_fn();
    REQUIRE(y.grad_fn()->name() == "ExpFnBackward");
    Tensor y2 = ExpFn::apply(x);
    y2.sum().backward();
    REQUIRE(values(x.grad())[1] == Approx(std::exp(1.0)).epsilon(1e-14));
    y.reset();
    REQUIRE(node.expired());
  }
  REQUIRE(autograd::Node::live_count() == baseline);
}

TEST_CASE("Function: a backward returning the wrong number or shape of gradients", "[custom_function]") {
  Tensor x = from_vector({1, 2}, {2}, f64(true));
  REQUIRE_THROWS_WITH(WrongCount::apply(x).sum().backward(),
                      "function WrongCountBackward returned an incorrect number of gradients (expected 1, got 3)");
  REQUIRE_THROWS_WITH(WrongShape::apply(x).sum().backward(),
                      "Function WrongShapeBackward returned an invalid gradient at index 0 - got [5] but expected "
                      "shape compatible with [2]");
  // A gradient the input broadcasts to is summed back instead (see engine_test).
  REQUIRE_THROWS_WITH(WrongRank::apply(x).sum().backward(),
                      "Function WrongRankBackward returned an invalid gradient at index 0 - got [] but expected "
                      "shape compatible with [2]");
}
