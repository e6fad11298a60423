// Tests ops/autograd/derivatives.cpp beyond the per-op tests: the double-backward rules of the
// fused backward kernels, second derivatives of the rules, what each rule saves for backward,
// node names, and the non-differentiable ops.
#include <catch2/catch.hpp>

#include <any>

#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;
using autograd::gradcheck;
using autograd::gradgradcheck;

TEST_CASE("fused backward kernels are differentiable in both arguments", "[derivatives][gradcheck]") {
  Tensor g = leaf({2, 3}, 1), x = leaf({2, 3}, 2);
  Tensor y01 = sigmoid(randn_seeded({2, 3}, 3)).requires_grad_();
  Tensor ytanh = tanh(randn_seeded({2, 3}, 4)).requires_grad_();
  REQUIRE(gradcheck1([](auto& v) { return sigmoid_backward(v[0], v[1]); }, {g, y01}));
  REQUIRE(gradcheck1([](auto& v) { return tanh_backward(v[0], v[1]); }, {g, ytanh}));
  REQUIRE(gradcheck1([](auto& v) { return silu_backward(v[0], v[1]); }, {g, x}));
  REQUIRE(gradcheck1([](auto& v) { return gelu_backward(v[0], v[1]); }, {g, x}));
  REQUIRE(gradcheck1([](auto& v) { return gelu_backward(v[0], v[1], "tanh"); }, {g, x}));
  // threshold_backward is piecewise constant in self: only grad_output is differentiable
  REQUIRE(gradcheck1([](auto& v) { return threshold_backward(v[0], v[1], 0.0); }, {g, randn_seeded({2, 3}, 5)}));
  REQUIRE(gradcheck1([](auto& v) { return threshold_backward(v[0], v[1], 0.5); }, {g, randn_seeded({2, 3}, 6)}));
  // broadcasting between grad_output and the saved tensor
  REQUIRE(gradcheck1([](auto& v) { return silu_backward(v[0], v[1]); }, {leaf({3}, 7), leaf({2, 3}, 8)}));
}

TEST_CASE("gradgradcheck: second derivatives of the pointwise rules", "[derivatives][gradcheck]") {
  Tensor x = leaf({2, 3}, 11);
  Tensor p = positive_leaf({2, 3}, 12);
  std::vector<std::pair<const char*, Fn>> ops = {
      {"relu", [](auto& v) { return mul(relu(v[0]), v[0]); }},
      {"silu", [](auto& v) { return silu(v[0]); }},
      {"gelu", [](auto& v) { return gelu(v[0]); }},
      {"gelu tanh", [](auto& v) { return gelu(v[0], "tanh"); }},
      {"sigmoid", [](auto& v) { return sigmoid(v[0]); }},
      {"tanh", [](auto& v) { return tanh(v[0]); }},
      {"cos", [](auto& v) { return cos(v[0]); }},
      {"neg", [](auto& v) { return mul(neg(v[0]), v[0]); }},
      {"abs", [](auto& v) { return mul(abs(v[0]), v[0]); }},
      {"pow 3", [](auto& v) { return pow(v[0], 3.0); }},
      {"scalar ops", [](auto& v) { return mul(add(mul(v[0], 2.0), 1.0), div(v[0], 3.0)); }},
      {"where", [](auto& v) { return where(tensor({1, 0, 1}, {3}, kBool), mul(v[0], v[0]), sin(v[0])); }},
      {"masked_fill", [](auto& v) { return mul(masked_fill(v[0], tensor({0, 1, 0}, {3}, kBool), 1.0), v[0]); }},
  };
  for (auto& [name, fn] : ops) {
    INFO(name);
    REQUIRE(gradgradcheck1(fn, {x}));
  }
  std::vector<std::pair<const char*, Fn>> positive = {
      {"log", [](auto& v) { return log(v[0]); }},
      {"sqrt", [](auto& v) { return sqrt(v[0]); }},
      {"rsqrt", [](auto& v) { return rsqrt(v[0]); }},
      {"pow -1.5", [](auto& v) { return pow(v[0], -1.5); }},
      {"div", [](auto& v) { return div(v[0].t(), v[0].t().sum({0}, true)); }},
  };
  for (auto& [name, fn] : positive) {
    INFO(name);
    REQUIRE(gradgradcheck1(fn, {p}));
  }
}

TEST_CASE("gradgradcheck: reductions, views, copies, matrix products, in-place", "[derivatives][gradcheck]") {
  Tensor x = leaf({2, 3}, 21), y = leaf({3, 2}, 22), b = leaf({2}, 23);
  std::vector<std::pair<const char*, Fn>> unary = {
      {"sum", [](auto& v) { return mul(sum(v[0], {1}), sum(v[0], {1})); }},
      {"mean", [](auto& v) { return pow(mean(v[0], {0}, true), 2.0); }},
      {"amax", [](auto& v) { return pow(amax(v[0], 1), 2.0); }},
      {"views", [](auto& v) { return pow(v[0].t().unsqueeze(0).expand({2, 3, 2}).slice(1, 0, 3, 2).reshape({-1}), 2.0); }},
      {"permute/squeeze", [](auto& v) { return pow(v[0].unsqueeze(2).permute({2, 1, 0}).squeeze(0), 3.0); }},
      {"clone/_to_copy", [](auto& v) { return mul(v[0].clone(), _to_copy(v[0], std::nullopt, std::nullopt)); }},
      {"cat", [](auto& v) { return pow(cat({v[0], v[0].slice(0, 0, 1)}), 2.0); }},
      {"triu", [](auto& v) { return pow(triu(v[0], 1), 2.0); }},
      {"in-place mul_", [](auto& v) { Tensor h = mul(v[0], 1.0); h.mul_(v[0]); return h; }},
      {"in-place add_", [](auto& v) { Tensor h = mul(v[0], v[0]); h.add_(sin(v[0])); return h; }},
      {"in-place relu_", [](auto& v) { Tensor h = mul(v[0], v[0]); h.add_(-0.5); h.relu_(); return h; }},
  };
  for (auto& [name, fn] : unary) {
    INFO(name);
    REQUIRE(gradgradcheck1(fn, {x}));
  }
  REQUIRE(gradgradcheck1([](auto& v) { return addmm(v[2], v[0], v[1]); }, {x, y, b}));
  REQUIRE(gradgradcheck1([](auto& v) { return matmul(v[0], v[1]); }, {leaf({2, 2, 3}, 24), y}));
  REQUIRE(gradgradcheck1([](auto& v) { return slice_backward(v[0], {4, 3}, 0, 1, 4, 2); }, {x}));
}

namespace {
// Records every tensor saved for backward while alive. It keeps (and packs) detached aliases:
// packing a saved output itself would make a reference cycle output -> node -> output.
struct SaveRecorder {
  std::vector<Tensor> saved;
  autograd::saved_tensors_hooks hooks{[this](const Tensor& t) -> std::any {
                                        saved.push_back(t.detach());
                                        return t.detach();
                                      },
                                      [](const std::any& a) { return std::any_cast<Tensor>(a); }};
};
bool holds(const std::vector<Tensor>& saved, const Tensor& t) {
  for (const Tensor& s : saved)
    if (s.is_alias_of(t) && s.sizes() == t.sizes()) return true;
  return false;
}
}  // namespace

TEST_CASE("what each rule saves for backward", "[derivatives][saved]") {
  Tensor a = leaf({2, 3}, 31), b = leaf({3, 2}, 32);
  auto saves = [](const std::function<Tensor()>& f) {
    SaveRecorder r;
    Tensor out = f();
    return std::make_pair(r.saved, out);
  };
  {  // nothing to save: add, sub, sum, mean, views, clone, cat
    for (const auto& f : std::vector<std::function<Tensor()>>{
             [&] { return add(a, a); }, [&] { return a - 1.0; }, [&] { return sum(a); }, [&] { return mean(a, {0}); },
             [&] { return a.t(); }, [&] { return a.view({6}); }, [&] { return a.slice(1, 0, 2); }, [&] { return a.clone(); },
             [&] { return cat({a, a}); }, [&] { return mul(a, 2.0); }, [&] { return neg(a); }, [&] { return triu(a); }}) {
      CHECK(saves(f).first.empty());
    }
  }
  {  // inputs: mul, div, mm, sin, log, gelu, silu
    auto [s, out] = saves([&] { return mul(a, b.t()); });
    CHECK(s.size() == 2);
    CHECK(holds(s, a));
    auto [s2, out2] = saves([&] { return mm(a, b); });
    CHECK(s2.size() == 2);
    CHECK(holds(s2, a));
    CHECK(holds(s2, b));
    auto [s3, out3] = saves([&] { return sin(a); });
    CHECK(s3.size() == 1);
    CHECK(holds(s3, a));
    auto [s4, out4] = saves([&] { return gelu(a); });
    CHECK(s4.size() == 1);
    CHECK(holds(s4, a));
  }
  {  // outputs: exp, tanh, sigmoid, relu, sqrt
    for (const auto& f : std::vector<std::function<Tensor()>>{[&] { return exp(a); }, [&] { return tanh(a); },
                                                              [&] { return sigmoid(a); }, [&] { return relu(a); }}) {
      auto [s, out] = saves(f);
      REQUIRE(s.size() == 1);
      CHECK(s[0].is_alias_of(out));
      CHECK_FALSE(s[0].is_alias_of(a));
    }
  }
  {  // amax saves its input and its output
    auto [s, out] = saves([&] { return amax(a, 1); });
    CHECK(s.size() == 2);
    CHECK(holds(s, a));
    CHECK(holds(s, out));
  }
  {  // in-place mul_ saves a copy of self's old value, not self
    Tensor h = mul(a, 1.0);
    SaveRecorder r;
    h.mul_(a);
    REQUIRE(r.saved.size() == 2);
    CHECK_FALSE(r.saved[0].is_alias_of(h));
    CHECK(holds(r.saved, a));
  }
  {  // nothing is saved when no input requires grad, or under no_grad
    Tensor c = randn_seeded({2, 3}, 33);
    SaveRecorder r;
    mul(c, c);
    sin(c);
    {
      autograd::NoGradGuard no_grad;
      mm(a, b);
    }
    CHECK(r.saved.empty());
  }
}

TEST_CASE("backward node names follow PyTorch's", "[derivatives]") {
  Tensor a = leaf({2, 3}, 41), b = leaf({3, 2}, 42), bias = leaf({2}, 43);
  auto name = [](const Tensor& t) { return t.grad_fn()->name(); };
  CHECK(name(mul(a, a)) == "MulBackward0");
  CHECK(name(add(a, 1.0)) == "AddBackward0");
  CHECK(name(mm(a, b)) == "MmBackward0");
  CHECK(name(a.t()) == "TransposeBackward0");
  CHECK(name(sum(a)) == "SumBackward0");
  CHECK(name(a.to(kFloat)) == "ToCopyBackward0");
  CHECK(name(threshold_backward(a, a, 0.0)) == "ThresholdBackwardBackward0");
  // composite ops show the ops they are made of
  CHECK(name(linear(a, b.t(), bias)) == "AddmmBackward0");
  CHECK(name(matmul(a, b)) == "MmBackward0");
  CHECK(name(a.t().reshape({6})) == "ViewBackward0");
  Tensor h = mul(a, 1.0);
  h.mul_(2.0);
  CHECK(name(h) == "MulBackward0");
}

TEST_CASE("non-differentiable ops: outputs never require grad", "[derivatives]") {
  Tensor a = leaf({2, 3}, 51);
  CHECK_FALSE(eq(a, a).requires_grad());
  CHECK_FALSE(zeros_like(a).requires_grad());
  CHECK_FALSE(ones_like(a).requires_grad());
  CHECK_FALSE(a.detach().requires_grad());
  CHECK(eq(a, a).grad_fn() == nullptr);
  // a non-differentiable output used in a differentiable op contributes no gradient
  Tensor y = mul(a, ones_like(a));
  y.sum().backward();
  check_values(a.grad(), std::vector<double>(6, 1.0));
}

TEST_CASE("a rule's saved tensors are freed after backward", "[derivatives]") {
  Tensor a = leaf({3}, 61);
  Tensor y = sin(a);
  y.sum().backward();
  REQUIRE_THROWS_WITH(y.sum().backward(), Contains("Trying to backward through the graph a second time"));
  Tensor z = exp(a);
  z.sum().backward({}, /*retain_graph=*/true);
  z.sum().backward();
  Tensor e = exp(a.detach());
  check_close(a.grad(), add(add(cos(a.detach()), e), e));
  // a rule that saves nothing can run again
  Tensor w = add(a, 1.0);
  w.sum().backward();
  CHECK_NOTHROW(w.sum().backward());
}

// ---- cases from the engine test suite (gradcheck of the first op set) ----
namespace engine_suite {
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
}  // namespace engine_suite
