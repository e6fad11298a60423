// Mirrors test/test_autograd.py (test_gradcheck_*).
// Tests ops/gradcheck.cpp: gradcheck accepts right derivatives and reports wrong ones.
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;
using autograd::AutogradContext;
using autograd::Function;
using V = std::vector<Tensor>;

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

TEST_CASE("gradcheck argument errors", "[gradcheck]") {
  auto identity = [](const V& in) { return V{in[0] * 1.0}; };
  REQUIRE_THROWS_WITH(autograd::gradcheck(identity, {ones({2}, kFloat).requires_grad_()}),
                      "gradcheck: input 0 is not double precision; finite differences need float64 (got Float)");
  REQUIRE_THROWS_WITH(autograd::gradcheck(identity, {ones({2}, kDouble)}), "gradcheck: no input requires grad");
  REQUIRE_THROWS_WITH(autograd::gradcheck([](const V&) { return V{}; }, {ones({2}, kDouble).requires_grad_()}),
                      "gradcheck: the function returned no floating point output");
}
