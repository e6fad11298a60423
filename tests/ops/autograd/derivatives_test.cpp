// Mirrors test/test_ops_gradients.py (gradcheck / gradgradcheck of every op).
// Tests ops/autograd/derivatives.cpp: gradcheck (finite differences in float64) of the rules of
// the first op set, with broadcasting shapes and non-contiguous inputs, and gradgradcheck of
// the rules whose backward is itself differentiated (create_graph).
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;
using autograd::gradcheck;
using autograd::gradgradcheck;
using Fn = autograd::GradcheckFn;
using V = std::vector<Tensor>;

namespace {

// A float64 leaf with values uniform in [lo, hi).
Tensor leaf(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Generator g(seed);
  Tensor t = rand(shape, kDouble, &g) * (hi - lo) + lo;
  return t.detach().requires_grad_();
}

// The same, stored transposed: a non-contiguous leaf of shape {rows, cols}.
Tensor leaf_t(int64_t rows, int64_t cols, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Tensor t = leaf({cols, rows}, seed, lo, hi).detach().transpose(0, 1).detach().requires_grad_();
  REMAT_CHECK(!t.is_contiguous() && t.sizes() == Shape({rows, cols}), "leaf_t: expected a transposed leaf");
  return t;
}

Fn binary(Tensor (*op)(const Tensor&, const Tensor&)) {
  return [op](const V& in) { return V{op(in[0], in[1])}; };
}
Fn unary(Tensor (*op)(const Tensor&)) {
  return [op](const V& in) { return V{op(in[0])}; };
}

}  // namespace

TEST_CASE("gradcheck: add, sub, mul, div with broadcasting", "[derivatives][gradcheck]") {
  using BinOp = Tensor (*)(const Tensor&, const Tensor&);
  struct Case {
    const char* name;
    BinOp op;
  };
  const Case cases[] = {{"add", &add}, {"sub", &sub}, {"mul", &mul}, {"div", &div}};
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{3}, {}}, {{}, {2, 2}}};
  for (const Case& c : cases) {
    for (const auto& [sa, sb] : shapes) {
      INFO(c.name << " " << IValue(sa).str() << " " << IValue(sb).str());
      Tensor a = leaf(sa, 1), b = leaf(sb, 2, 0.5, 2.0);  // b stays away from 0 (div)
      REQUIRE(gradcheck(binary(c.op), {a, b}));
    }
    INFO(c.name << " non-contiguous");
    REQUIRE(gradcheck(binary(c.op), {leaf_t(2, 3, 3), leaf_t(2, 3, 4, 0.5, 2.0)}));
    REQUIRE(gradcheck(binary(c.op), {leaf_t(3, 2, 5), leaf({2}, 6, 0.5, 2.0)}));
  }
}

TEST_CASE("gradcheck: one operand without grad", "[derivatives][gradcheck]") {
  Tensor a = leaf({2, 3}, 7);
  Tensor b = leaf({3}, 8, 0.5, 2.0).detach();
  for (auto op : {&add, &sub, &mul, &div}) {
    REQUIRE(gradcheck(binary(op), {a, b}));
    REQUIRE(gradcheck(binary(op), {b, a}));
  }
}

TEST_CASE("gradcheck: scalar overloads add/mul/div.Scalar", "[derivatives][gradcheck]") {
  Tensor a = leaf({2, 3}, 9);
  REQUIRE(gradcheck([](const V& in) { return V{add(in[0], 1.5)}; }, {a}));
  REQUIRE(gradcheck([](const V& in) { return V{mul(in[0], -2.5)}; }, {a}));
  REQUIRE(gradcheck([](const V& in) { return V{div(in[0], 4.0)}; }, {a}));
}

TEST_CASE("gradcheck: neg, sin, cos, exp, log, relu", "[derivatives][gradcheck]") {
  REQUIRE(gradcheck(unary(&neg), {leaf({2, 3}, 10)}));
  REQUIRE(gradcheck(unary(&sin), {leaf({2, 3}, 11, -3, 3)}));
  REQUIRE(gradcheck(unary(&cos), {leaf({2, 3}, 12, -3, 3)}));
  REQUIRE(gradcheck(unary(&exp), {leaf({2, 3}, 13)}));
  REQUIRE(gradcheck(unary(&log), {leaf({2, 3}, 14, 0.5, 3.0)}));
  // relu: values away from the kink at 0 (finite differences straddling it are meaningless)
  Tensor r = from_vector({-1.5, -0.2, 0.3, 2.0, -0.7, 0.9}, {2, 3}, kDouble).requires_grad_();
  REQUIRE(gradcheck(unary(&relu), {r}));
  // Non-contiguous inputs.
  REQUIRE(gradcheck(unary(&neg), {leaf_t(2, 3, 15)}));
  REQUIRE(gradcheck(unary(&sin), {leaf_t(2, 3, 16)}));
  REQUIRE(gradcheck(unary(&cos), {leaf_t(2, 3, 17)}));
  REQUIRE(gradcheck(unary(&exp), {leaf_t(2, 3, 18)}));
  REQUIRE(gradcheck(unary(&log), {leaf_t(2, 3, 19, 0.5, 3.0)}));
  REQUIRE(gradcheck(unary(&relu), {r.detach().transpose(0, 1).detach().requires_grad_()}));
}

TEST_CASE("gradcheck: sum over everything and over dims, with and without keepdim", "[derivatives][gradcheck]") {
  Tensor x = leaf({2, 3, 4}, 20);
  REQUIRE(gradcheck([](const V& in) { return V{sum(in[0])}; }, {x}));
  for (const Shape& dims : {Shape{0}, Shape{1}, Shape{-1}, Shape{0, 2}, Shape{0, 1, 2}}) {
    for (bool keepdim : {false, true}) {
      INFO("dims " << IValue(dims).str() << " keepdim " << keepdim);
      REQUIRE(gradcheck([dims, keepdim](const V& in) { return V{sum(in[0], dims, keepdim)}; }, {x}));
    }
  }
  REQUIRE(gradcheck([](const V& in) { return V{sum(in[0], {1}, true)}; }, {leaf_t(3, 4, 21)}));
}

TEST_CASE("gradcheck: mm, contiguous and transposed operands", "[derivatives][gradcheck]") {
  REQUIRE(gradcheck(binary(&mm), {leaf({2, 3}, 22), leaf({3, 4}, 23)}));
  REQUIRE(gradcheck(binary(&mm), {leaf_t(2, 3, 24), leaf({3, 4}, 25)}));
  REQUIRE(gradcheck(binary(&mm), {leaf({2, 3}, 26), leaf_t(3, 4, 27)}));
  REQUIRE(gradcheck(binary(&mm), {leaf_t(2, 3, 28), leaf_t(3, 4, 29)}));
  REQUIRE(gradcheck(binary(&mm), {leaf({1, 3}, 30), leaf({3, 1}, 31)}));
  // mm(...).sum(): the incoming gradient is an expanded (stride 0) tensor.
  REQUIRE(gradcheck([](const V& in) { return V{mm(in[0], in[1]).sum()}; }, {leaf({2, 3}, 32), leaf({3, 2}, 33)}));
}

TEST_CASE("gradcheck: view, transpose, clone", "[derivatives][gradcheck]") {
  Tensor x = leaf({2, 3}, 34);
  REQUIRE(gradcheck([](const V& in) { return V{view(in[0], {3, 2})}; }, {x}));
  REQUIRE(gradcheck([](const V& in) { return V{view(in[0], {-1})}; }, {x}));
  REQUIRE(gradcheck([](const V& in) { return V{view(in[0], {1, 2, 3})}; }, {x}));
  REQUIRE(gradcheck([](const V& in) { return V{transpose(in[0], 0, 1)}; }, {x}));
  REQUIRE(gradcheck([](const V& in) { return V{transpose(in[0], -1, 0)}; }, {leaf_t(2, 3, 35)}));
  REQUIRE(gradcheck([](const V& in) { return V{transpose(in[0], 0, 2)}; }, {leaf({2, 3, 2}, 36)}));
  REQUIRE(gradcheck([](const V& in) { return V{clone(in[0])}; }, {x}));
  REQUIRE(gradcheck([](const V& in) { return V{clone(in[0])}; }, {leaf_t(2, 3, 37)}));
  // A view op followed by an op that reads the view.
  REQUIRE(gradcheck([](const V& in) { return V{mul(transpose(in[0], 0, 1), in[1])}; }, {x, leaf({3, 2}, 38)}));
}

TEST_CASE("detach: no gradient flows through it", "[derivatives]") {
  Tensor x = leaf({2, 3}, 39);
  Tensor d = detach(x);
  REQUIRE_FALSE(d.requires_grad());
  REQUIRE(d.grad_fn() == nullptr);
  // d/dx of x * detach(x) is detach(x) (not 2x).
  Tensor g = autograd::grad({mul(x, detach(x)).sum()}, {x})[0];
  REQUIRE(equal(g, x.detach()));
  REQUIRE(gradcheck([](const V& in) { return V{add(in[0], detach(in[1]))}; }, {x, leaf({2, 3}, 40).detach()}));
}

TEST_CASE("gradcheck: in-place add_ and mul_ on a non-leaf, with broadcasting", "[derivatives][gradcheck]") {
  auto add_inplace = [](const V& in) {
    Tensor h = in[0] * 1.0;
    h.add_(in[1]);
    return V{h};
  };
  auto mul_inplace = [](const V& in) {
    Tensor h = in[0] * 1.0;
    h.mul_(in[1]);
    return V{h};
  };
  for (const auto& [sa, sb] : std::vector<std::pair<Shape, Shape>>{{{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{2, 3}, {}}}) {
    INFO(IValue(sa).str() << " " << IValue(sb).str());
    REQUIRE(gradcheck(add_inplace, {leaf(sa, 41), leaf(sb, 42)}));
    REQUIRE(gradcheck(mul_inplace, {leaf(sa, 43), leaf(sb, 44)}));
  }
  REQUIRE(gradcheck(mul_inplace, {leaf_t(2, 3, 45), leaf_t(2, 3, 46)}));
  REQUIRE(gradcheck(
      [](const V& in) {
        Tensor h = in[0] * 1.0;
        h.add_(2.0).mul_(-3.0);
        return V{h};
      },
      {leaf({2, 3}, 47)}));
  // Ops reading the result of an in-place op, and an in-place op adding it.
  REQUIRE(gradcheck(
      [](const V& in) {
        Tensor h = in[0] * 2.0;  // (not exp: it saves its output, which mul_ would then modify)
        h.mul_(in[1]);
        Tensor out = h.sin();
        out.add_(h);
        return V{out};
      },
      {leaf({3}, 48), leaf({3}, 49)}));
  // add_/mul_ with an operand that needs no gradient.
  Tensor constant = leaf({3}, 61).detach();
  REQUIRE(gradcheck(
      [constant](const V& in) {
        Tensor h = in[0] * 1.0;
        h.add_(constant).mul_(constant);
        return V{h};
      },
      {leaf({2, 3}, 62)}));
}

TEST_CASE("gradgradcheck: second derivatives of mul, div, sin, cos, exp, log, mm, sum", "[derivatives][gradgradcheck]") {
  REQUIRE(gradgradcheck(binary(&mul), {leaf({2, 3}, 50), leaf({3}, 51)}));
  REQUIRE(gradgradcheck(binary(&div), {leaf({2, 3}, 52), leaf({3}, 53, 0.5, 2.0)}));
  REQUIRE(gradgradcheck(unary(&sin), {leaf({2, 3}, 54)}));
  REQUIRE(gradgradcheck(unary(&cos), {leaf({2, 3}, 55)}));
  REQUIRE(gradgradcheck(unary(&exp), {leaf({2, 3}, 56)}));
  REQUIRE(gradgradcheck(unary(&log), {leaf({2, 3}, 57, 0.5, 2.0)}));
  REQUIRE(gradgradcheck(binary(&mm), {leaf({2, 3}, 58), leaf_t(3, 2, 59)}));
  REQUIRE(gradgradcheck([](const V& in) { return V{mul(sum(in[0], {1}, true), in[0])}; }, {leaf({2, 3}, 60)}));
}
