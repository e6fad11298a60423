// Tests ops/gradcheck.cpp: gradcheck and gradgradcheck accept correct derivatives and reject
// wrong ones (with the mismatch in the message), and check their arguments.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using namespace remat::autograd;
using Catch::Contains;
using autograd::AutogradContext;
using autograd::Function;
using V = std::vector<Tensor>;

namespace {

// y = x^2 with a backward that is off by `scale` (1: right).
template <int kScalePercent>
struct ScaledSquare : Function<ScaledSquare<kScalePercent>> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return mul(x, x);
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
    Tensor x = ctx->get_saved_variables()[0];
    return {mul(mul(grads[0], x), 2.0 * kScalePercent / 100.0)};
  }
};

// y = x^2 whose backward is right but not differentiable itself (it reads a detached x), so its
// second derivative is missing.
struct SquareDetachedBackward : Function<SquareDetachedBackward> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x) {
    ctx->save_for_backward({x});
    return mul(x, x);
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
    Tensor x = ctx->get_saved_variables()[0].detach();
    return {mul(grads[0], mul(x, 2.0))};
  }
};

}  // namespace

TEST_CASE("gradcheck accepts correct derivatives", "[gradcheck]") {
  CHECK(gradcheck([](const std::vector<Tensor>& x) { return std::vector<Tensor>{sin(x[0])}; }, {leaf({2, 3}, 1)}));
  CHECK(gradcheck1([](auto& x) { return ScaledSquare<100>::apply(x[0]); }, {leaf({4}, 2)}));
  // several outputs and inputs, one input not requiring grad, an undefined input
  Tensor a = leaf({3}, 3), b = leaf({3}, 4), c = randn_seeded({3}, 5);
  CHECK(gradcheck(
      [](const std::vector<Tensor>& x) {
        return std::vector<Tensor>{mul(x[0], x[1]), add(sin(x[0]), x[2]), sum(x[1])};
      },
      {a, b, c, Tensor()}));
  // an output independent of an input: both Jacobians are zero
  CHECK(gradcheck([](const std::vector<Tensor>& x) { return std::vector<Tensor>{exp(x[0])}; }, {leaf({2}, 6), leaf({2}, 7)}));
  // non-floating outputs are skipped
  CHECK(gradcheck([](const std::vector<Tensor>& x) { return std::vector<Tensor>{eq(x[0], x[0]), cos(x[0])}; }, {leaf({2}, 8)}));
  // a non-contiguous input
  CHECK(gradcheck1([](auto& x) { return mul(x[0], x[0].t().t()); }, {transposed_leaf({3, 2}, 9)}));
}

TEST_CASE("gradcheck does not change its inputs", "[gradcheck]") {
  Tensor x = leaf({2, 2}, 10);
  std::vector<double> before = x.to_vector();
  int64_t v0 = x._version();
  gradcheck1([](auto& x) { return tanh(x[0]); }, {x});
  CHECK(x.to_vector() == before);
  CHECK(x._version() == v0);
  CHECK_FALSE(x.grad().defined());  // gradcheck uses autograd::grad, not .backward()
}

TEST_CASE("gradcheck rejects a wrong derivative, naming output, input, element and values", "[gradcheck]") {
  Tensor x = from_vector({1.5, -2.0}, {2}, TensorOptions().dtype(kDouble).requires_grad(true));
  REQUIRE_THROWS_WITH(gradcheck1([](auto& v) { return ScaledSquare<50>::apply(v[0]); }, {x}),
                      Contains("Jacobian mismatch for output 0 with respect to input 0") && Contains("numerical:3") &&
                          Contains("analytical:1.5") && Contains("input element 0, output element 0"));
  // the second input is the wrong one
  Tensor y = leaf({2}, 11);
  REQUIRE_THROWS_WITH(
      gradcheck([](const std::vector<Tensor>& v) { return std::vector<Tensor>{add(sin(v[0]), ScaledSquare<110>::apply(v[1]))}; },
                {leaf({2}, 12), y}),
      Contains("with respect to input 1"));
  // the second output is the wrong one
  REQUIRE_THROWS_WITH(
      gradcheck([](const std::vector<Tensor>& v) { return std::vector<Tensor>{sin(v[0]), ScaledSquare<90>::apply(v[0])}; },
                {leaf({2}, 13)}),
      Contains("Jacobian mismatch for output 1"));
  // an output cut off from the graph has a zero analytical Jacobian
  REQUIRE_THROWS_WITH(gradcheck1([](auto& v) { return sin(v[0]).detach(); }, {leaf({2}, 14)}), Contains("Jacobian mismatch"));
}

TEST_CASE("gradcheck tolerances", "[gradcheck]") {
  // a 0.01% error in the derivative: inside rtol 1e-3, outside rtol 1e-6
  Fn almost = [](auto& v) { return ScaledSquare<100>::apply(v[0]); };
  struct Off : Function<Off> {
    static Tensor forward(AutogradContext*, const Tensor& x) { return mul(x, 3.0); }
    static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {mul(g[0], 3.0003)}; }
  };
  Fn off = [](auto& v) { return Off::apply(v[0]); };
  Tensor x = leaf({3}, 15);
  CHECK(gradcheck1(off, {x}, 1e-5, 1e-3));
  REQUIRE_THROWS_WITH(gradcheck1(off, {x}, 1e-7, 1e-6), Contains("Jacobian mismatch"));
  CHECK(gradcheck1(almost, {x}, 1e-7, 1e-6));
}

TEST_CASE("gradgradcheck accepts correct second derivatives and rejects missing ones", "[gradcheck]") {
  CHECK(gradgradcheck1([](auto& x) { return mul(x[0], x[1]); }, {leaf({2, 3}, 21), leaf({3}, 22)}));
  CHECK(gradgradcheck1([](auto& x) { return sin(x[0]); }, {leaf({3}, 23)}));
  CHECK(gradgradcheck1([](auto& x) { return ScaledSquare<100>::apply(x[0]); }, {leaf({3}, 24)}));
  CHECK(gradgradcheck(
      [](const std::vector<Tensor>& x) { return std::vector<Tensor>{mul(x[0], x[0]), sin(x[1])}; },
      {leaf({2}, 25), leaf({2}, 26)}));
  // first derivative right, second missing
  Tensor x = leaf({3}, 27);
  CHECK(gradcheck1([](auto& v) { return SquareDetachedBackward::apply(v[0]); }, {x}));
  REQUIRE_THROWS_WITH(gradgradcheck1([](auto& v) { return SquareDetachedBackward::apply(v[0]); }, {x}),
                      Contains("Jacobian mismatch"));
}

TEST_CASE("gradcheck argument errors", "[gradcheck][errors]") {
  Fn f = [](auto& x) { return sin(x[0]); };
  REQUIRE_THROWS_WITH(gradcheck1(f, {randn_seeded({2}, 31, kFloat).requires_grad_()}),
                      Contains("gradcheck: input 0 is not double precision") && Contains("Float"));
  REQUIRE_THROWS_WITH(gradcheck1(f, {randn_seeded({2}, 32)}), Contains("gradcheck: no input requires grad"));
  REQUIRE_THROWS_WITH(gradcheck1(f, {}), Contains("no input requires grad"));
  REQUIRE_THROWS_WITH(gradcheck([](const std::vector<Tensor>& x) { return std::vector<Tensor>{eq(x[0], x[0])}; }, {leaf({2}, 33)}),
                      Contains("gradcheck: the function returned no floating point output"));
  REQUIRE_THROWS_WITH(gradcheck([](const std::vector<Tensor>&) { return std::vector<Tensor>{}; }, {leaf({2}, 34)}),
                      Contains("no floating point output"));
}

// ---- cases from the engine test suite (gradcheck of the first op set) ----
namespace engine_suite {
namespace {
// y = x^2 with a deliberately wrong backward (3x instead of 2x).
struct WrongSquare : Function<WrongSquare> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> grads) {
    return {grads[0] * ctx->get_saved_variables()[0] * 3.0};
  }
};
}  // namespace

TEST_CASE("gradcheck passes a right derivative and names the element of a wrong one", "[gradcheck]") {
  Tensor x = from_vector({0.5, -1.0}, {2}, kDouble).requires_grad_();
  REQUIRE(autograd::gradcheck([](const V& in) { return V{in[0] * in[0]}; }, {x}));
  REQUIRE_THROWS_WITH(autograd::gradcheck([](const V& in) { return V{WrongSquare::apply(in[0])}; }, {x}),
                      Catch::StartsWith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:1\n"
                                        "analytical:1.5\n(at input element 0, output element 0; input shape [2], "
                                        "output shape [2])"));
}

TEST_CASE("gradcheck argument errors (engine suite)", "[gradcheck]") {
  auto identity = [](const V& in) { return V{in[0] * 1.0}; };
  REQUIRE_THROWS_WITH(autograd::gradcheck(identity, {ones({2}, kFloat).requires_grad_()}),
                      "gradcheck: input 0 is not double precision; finite differences need float64 (got Float)");
  REQUIRE_THROWS_WITH(autograd::gradcheck(identity, {ones({2}, kDouble)}), "gradcheck: no input requires grad");
  REQUIRE_THROWS_WITH(autograd::gradcheck([](const V&) { return V{}; }, {ones({2}, kDouble).requires_grad_()}),
                      "gradcheck: the function returned no floating point output");
}
}  // namespace engine_suite
