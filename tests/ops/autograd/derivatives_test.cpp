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
