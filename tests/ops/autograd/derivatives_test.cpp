// Tests the derivative rules (each Def's derivative(), registered by ops/autograd/derivatives.cpp)
// beyond the per-op tests: the double-backward rules of the
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
  CHECK(name(a.t()) == "TBackward0");
  CHECK(name(sum(a)) == "SumBackward0");
  CHECK(name(a.to(kFloat)) == "ToCopyBackward0");
  CHECK(name(threshold_backward(a, a, 0.0)) == "ThresholdBackwardBackward0");
  // composite ops show the ops they are made of
  CHECK(name(linear(a, b.t(), bias)) == "AddmmBackward0");
  CHECK(name(matmul(a, b)) == "MmBackward0");
  CHECK(name(a.t().reshape({6})) == "UnsafeViewBackward0");  // a copy, handed back through _unsafe_view
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

// ---- each rule saves only what a needed gradient reads (PyTorch's should_compute_output guards
// on each SavedVariable; derivatives.yaml's per-input formulas) ----
namespace saving {
namespace {
using V = std::vector<Tensor>;
using Op = std::function<Tensor(const V&)>;

// What one forward saved for backward.
struct Saved {
  int64_t count;  // tensors the pack hook saw
  int64_t bytes;  // their bytes
  int64_t held;   // bytes allocated after forward: the output and whatever its graph keeps alive
};
std::ostream& operator<<(std::ostream& os, const Saved& s) {
  return os << "{" << s.count << " tensors, " << s.bytes << " bytes packed, " << s.held << " bytes held}";
}

// inputs: the op's arguments (float64 values; other dtypes are passed as they are). expected:
// what is saved for each set of floating inputs requiring grad (bit i: input i), for every
// non-empty set.
struct Case {
  const char* name;
  V inputs;
  Op op;
  std::map<uint32_t, Saved> expected;
};

struct Run {
  Saved saved{0, 0, 0};
  V grads;  // of the inputs, after backward of (out * weights).sum()
};

// Runs op on fresh non-leaf copies (x * 1.0, which saves nothing) of the floating inputs, with
// grad required of those in mask, so that memory_allocated sees what the graph keeps of them.
Run run(const Case& c, uint32_t mask) {
  V leaves;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Tensor& t = c.inputs[i];
    leaves.push_back(isFloatingType(t.dtype()) ? t.detach().requires_grad_(((mask >> i) & 1u) != 0) : t);
  }
  Run r;
  const int64_t before = memory_allocated();
  Tensor out;
  {
    // The hook keeps a detached alias (the same bytes; packing a saved output itself would make
    // a reference cycle output -> node -> output).
    autograd::saved_tensors_hooks count([&r](const Tensor& t) -> std::any {
                                          r.saved.count += 1;
                                          r.saved.bytes += t.nbytes();
                                          return t.detach();
                                        },
                                        [](const std::any& a) { return std::any_cast<Tensor>(a); });
    V args;
    for (const Tensor& l : leaves) args.push_back(isFloatingType(l.dtype()) ? mul(l, 1.0) : l);
    out = c.op(args);
  }
  r.saved.held = memory_allocated() - before;
  if (mask != 0) {
    mul(out, randn_seeded(out.sizes(), 99)).sum().backward();
    for (const Tensor& l : leaves) r.grads.push_back(l.requires_grad() ? l.grad() : Tensor());
  }
  return r;
}

void check_case(const Case& c) {
  uint32_t floating = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (isFloatingType(c.inputs[i].dtype())) floating |= 1u << i;
  const Run all = run(c, floating);
  for (uint32_t mask = 0; mask <= floating; ++mask) {
    if ((mask & ~floating) != 0) continue;
    INFO(c.name << ", inputs requiring grad (bits): " << mask);
    Run r = run(c, mask);
    if (mask == 0) {  // no node, nothing saved
      CHECK(r.saved.count == 0);
      continue;
    }
    auto e = c.expected.find(mask);
    REQUIRE(e != c.expected.end());
    INFO("saved " << r.saved << ", expected " << e->second);
    CHECK(r.saved.count == e->second.count);
    CHECK(r.saved.bytes == e->second.bytes);
    CHECK(r.saved.held == e->second.held);
    // A gradient does not depend on which other inputs require grad.
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (!((mask >> i) & 1u)) continue;
      INFO("gradient of input " << i);
      if (!all.grads[i].defined()) {  // no gradient flows to it (threshold_backward's self)
        CHECK_FALSE(r.grads[i].defined());
        continue;
      }
      REQUIRE(r.grads[i].defined());
      CHECK(allclose(r.grads[i], all.grads[i], 1e-12, 1e-12));
    }
  }
}

Tensor f64(const Shape& s, uint64_t seed) { return randn_seeded(s, seed); }
Tensor positive(const Shape& s, uint64_t seed) { return add(abs(randn_seeded(s, seed)), 0.5); }

// out = a * b, saving both whatever needs a gradient (what a Function written this way does).
struct SaveBoth : autograd::Function<SaveBoth> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor a, Tensor b) {
    ctx->save_for_backward({a, b});
    return a * b;
  }
  static V backward(autograd::AutogradContext* ctx, V grads) {
    V s = ctx->get_saved_variables();
    return {grads[0] * s[1], sum_to_size(grads[0] * s[0], s[1].sizes())};
  }
};
}  // namespace

// Bytes, float64: a [2, 3] 48, r [3] 24, m [3, 4] 96; outputs: [2, 3] 48, [2, 4] 64.
// held = the output + the saved tensors that are not the output (the inputs are fresh copies).
TEST_CASE("saved tensors: pointwise binary ops save an operand only for the other's gradient", "[derivatives][saved]") {
  Tensor a = f64({2, 3}, 1), r = positive({3}, 2), a2 = f64({2, 3}, 3);
  Tensor cond = tensor({1, 0, 1, 1, 0, 0}, {2, 3}, kBool), row_mask = tensor({0, 1, 0}, {3}, kBool);
  const std::vector<Case> cases = {
      // self: grad * other; other: grad * self
      {"mul", {a, r}, [](const V& v) { return mul(v[0], v[1]); }, {{1, {1, 24, 72}}, {2, {1, 48, 96}}, {3, {2, 72, 120}}}},
      // self: grad / other; other: -grad * self / other^2
      {"div", {a, r}, [](const V& v) { return div(v[0], v[1]); }, {{1, {1, 24, 72}}, {2, {2, 72, 120}}, {3, {2, 72, 120}}}},
      {"add", {a, r}, [](const V& v) { return add(v[0], v[1]); }, {{1, {0, 0, 48}}, {2, {0, 0, 48}}, {3, {0, 0, 48}}}},
      {"sub", {a, r}, [](const V& v) { return sub(v[0], v[1]); }, {{1, {0, 0, 48}}, {2, {0, 0, 48}}, {3, {0, 0, 48}}}},
      // both gradients read both inputs and the result
      {"maximum", {a, a2}, [](const V& v) { return maximum(v[0], v[1]); },
       {{1, {3, 144, 144}}, {2, {3, 144, 144}}, {3, {3, 144, 144}}}},
      {"minimum", {a, a2}, [](const V& v) { return minimum(v[0], v[1]); },
       {{1, {3, 144, 144}}, {2, {3, 144, 144}}, {3, {3, 144, 144}}}},
      // the condition (6 bytes, not a copy) for either gradient
      {"where", {cond, a, r}, [](const V& v) { return where(v[0], v[1], v[2]); },
       {{2, {1, 6, 48}}, {4, {1, 6, 48}}, {6, {1, 6, 48}}}},
      {"masked_fill", {a, row_mask}, [](const V& v) { return masked_fill(v[0], v[1], 2.0); }, {{1, {1, 3, 48}}}},
      {"pow", {a}, [](const V& v) { return pow(v[0], 3.0); }, {{1, {1, 48, 96}}}},
      {"mul.Scalar", {a}, [](const V& v) { return mul(v[0], 3.0); }, {{1, {0, 0, 48}}}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("saved tensors: unary ops save their input or their result", "[derivatives][saved]") {
  Tensor a = f64({2, 3}, 4), p = positive({2, 3}, 5);
  auto unary = [](const char* name, Tensor (*op)(const Tensor&), const Tensor& x, Saved saved) {
    return Case{name, {x}, [op](const V& v) { return op(v[0]); }, {{1, saved}}};
  };
  const Saved input{1, 48, 96}, result{1, 48, 48}, nothing{0, 0, 48};
  const std::vector<Case> cases = {
      unary("sin", &remat::sin, a, input),         unary("cos", &remat::cos, a, input),
      unary("log", &remat::log, p, input),         unary("silu", &remat::silu, a, input),
      unary("abs", &remat::abs, a, input),         unary("exp", &remat::exp, a, result),
      unary("tanh", &remat::tanh, a, result),      unary("sigmoid", &remat::sigmoid, a, result),
      unary("relu", &remat::relu, a, result),      unary("sqrt", &remat::sqrt, p, result),
      unary("rsqrt", &remat::rsqrt, p, result),    unary("neg", &remat::neg, a, nothing),
      {"gelu", {a}, [](const V& v) { return gelu(v[0]); }, {{1, input}}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("saved tensors: mm, bmm, addmm and linear save a factor only for the other factor's gradient",
          "[derivatives][saved]") {
  Tensor a = f64({2, 3}, 6), m = f64({3, 4}, 7), bias = f64({4}, 8), w = f64({4, 3}, 9);
  Tensor p = f64({2, 2, 3}, 10), q = f64({2, 3, 4}, 11);  // 96 and 192 bytes; bmm's output 128
  // addmm and linear: bit 0 bias (needs nothing), bit 1 the input, bit 2 the second factor
  const std::map<uint32_t, Saved> addmm_saves = {{1, {0, 0, 64}},   {2, {1, 96, 160}},  {3, {1, 96, 160}},
                                                 {4, {1, 48, 112}}, {5, {1, 48, 112}},  {6, {2, 144, 208}},
                                                 {7, {2, 144, 208}}};
  std::map<uint32_t, Saved> linear_saves;  // linear(x, w, bias) = addmm(bias, x, w^T): bits x, w, bias
  for (auto [mask, saved] : addmm_saves) linear_saves[((mask & 1u) << 2) | (mask >> 1)] = saved;
  const std::vector<Case> cases = {
      {"mm", {a, m}, [](const V& v) { return mm(v[0], v[1]); }, {{1, {1, 96, 160}}, {2, {1, 48, 112}}, {3, {2, 144, 208}}}},
      {"bmm", {p, q}, [](const V& v) { return bmm(v[0], v[1]); },
       {{1, {1, 192, 320}}, {2, {1, 96, 224}}, {3, {2, 288, 416}}}},
      {"addmm", {bias, a, m}, [](const V& v) { return addmm(v[0], v[1], v[2]); }, addmm_saves},
      {"linear", {a, w, bias}, [](const V& v) { return linear(v[0], v[1], v[2]); }, linear_saves},
      {"linear without bias", {a, w}, [](const V& v) { return linear(v[0], v[1]); },
       {{1, {1, 96, 160}}, {2, {1, 48, 112}}, {3, {2, 144, 208}}}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("saved tensors: reductions, softmax, views and cat", "[derivatives][saved]") {
  Tensor a = f64({2, 3}, 12), b = f64({1, 3}, 13);
  const std::vector<Case> cases = {
      {"sum", {a}, [](const V& v) { return sum(v[0], {1}); }, {{1, {0, 0, 16}}}},
      {"mean", {a}, [](const V& v) { return mean(v[0], {0}, true); }, {{1, {0, 0, 24}}}},
      // input and result: the gradient goes to the maxima
      {"amax", {a}, [](const V& v) { return amax(v[0], 1); }, {{1, {2, 64, 64}}}},
      {"softmax", {a}, [](const V& v) { return softmax(v[0], 1); }, {{1, {1, 48, 48}}}},
      {"log_softmax", {a}, [](const V& v) { return log_softmax(v[0], 0); }, {{1, {1, 48, 48}}}},
      // views keep their base (48 bytes) alive, and save nothing
      {"views", {a},
       [](const V& v) { return v[0].t().unsqueeze(0).permute({0, 2, 1}).squeeze(0).slice(1, 0, 2).expand({2, 2}); },
       {{1, {0, 0, 48}}}},
      {"view", {a}, [](const V& v) { return v[0].view({3, 2}); }, {{1, {0, 0, 48}}}},
      {"cat", {a, b}, [](const V& v) { return cat({v[0], v[1]}); }, {{1, {0, 0, 72}}, {2, {0, 0, 72}}, {3, {0, 0, 72}}}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("saved tensors: layer_norm and rms_norm", "[derivatives][saved]") {
  // x [2, 3] 48 bytes, weight and bias [3] 24, mean and rstd [2, 1] 16 each
  Tensor x = f64({2, 3}, 14), w = f64({3}, 15), b = f64({3}, 16);
  const Saved stats{4, 48 + 24 + 16 + 16, 48 + 104};    // input, weight, mean, rstd
  const Saved stats_and_bias{5, 128, 48 + 128};          // and bias (the fused kernel's grad_bias)
  const std::vector<Case> cases = {
      // bits: x, weight, bias. bias's gradient alone (sum of grad over the rows) reads nothing
      // but bias, which the fused kernel needs for grad_bias when it also computes the others
      {"layer_norm", {x, w, b}, [](const V& v) { return layer_norm(v[0], {3}, v[1], v[2]); },
       {{1, stats}, {2, stats}, {3, stats}, {4, {1, 24, 72}}, {5, stats_and_bias}, {6, stats_and_bias}, {7, stats_and_bias}}},
      {"layer_norm without affine", {x}, [](const V& v) { return layer_norm(v[0], {3}); }, {{1, {3, 80, 128}}}},
      // the CPU's composite, as PyTorch 2.15 saves it (counted there with saved_tensors_hooks): x:
      // pow's self, rsqrt's result, mul's self and other (x, rstd), the weight; weight: x * rstd
      {"rms_norm", {x, w}, [](const V& v) { return rms_norm(v[0], {3}, v[1]); },
       {{1, {5, 152, 136}}, {2, {1, 48, 96}}, {3, {6, 200, 184}}}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("saved tensors: embedding, cross_entropy, dropout", "[derivatives][saved]") {
  Tensor weight = f64({5, 3}, 17), logits = f64({4, 5}, 18), a = f64({2, 3}, 19);
  Tensor indices = tensor({0, 4, 4, 2}, {4}, kLong), targets = tensor({1, 0, 4, 2}, {4}, kLong);  // 32 bytes
  const std::vector<Case> cases = {
      // the indices (not a copy)
      {"embedding", {weight, indices}, [](const V& v) { return embedding(v[0], v[1]); }, {{1, {1, 32, 96}}}},
      // logits (160 bytes) and targets; the output is one float64
      {"cross_entropy", {logits, targets}, [](const V& v) { return cross_entropy(v[0], v[1]); }, {{1, {2, 192, 168}}}},
      // the keep mask (6 bytes of bool)
      {"dropout", {a},
       [](const V& v) {
         Generator g(7);
         return dropout(v[0], 0.5, /*train=*/true, &g);
       },
       {{1, {1, 6, 54}}}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("saved tensors: causal scaled_dot_product_attention under each requires_grad set", "[derivatives][saved]") {
  // q, k, v [2, 3, 4] (192 bytes each); scores and probabilities [2, 3, 3] (144); the causal
  // mask [3, 3] (9 bytes of bool); the output 192. q @ k^T saves k^T for q's gradient and q for
  // k's; masked_fill its mask and softmax its result when q or k needs a gradient; probs @ v
  // saves v for the probabilities' gradient (q or k) and the probabilities for v's.
  Tensor q = f64({2, 3, 4}, 20), k = f64({2, 3, 4}, 21), v = f64({2, 3, 4}, 22);
  const Case c{"scaled_dot_product_attention",
               {q, k, v},
               [](const V& x) { return scaled_dot_product_attention(x[0], x[1], x[2], /*is_causal=*/true); },
               {{1, {4, 192 + 9 + 144 + 192, 192 + 192 + 9 + 144 + 192}},
                {2, {4, 192 + 9 + 144 + 192, 192 + 192 + 9 + 144 + 192}},
                {3, {5, 192 + 192 + 9 + 144 + 192, 192 + 384 + 9 + 144 + 192}},
                {4, {1, 144, 192 + 144}},
                {5, {5, 192 + 9 + 144 + 192 + 144, 192 + 192 + 9 + 144 + 192}},
                {6, {5, 192 + 9 + 144 + 192 + 144, 192 + 192 + 9 + 144 + 192}},
                {7, {6, 384 + 9 + 144 + 192 + 144, 192 + 384 + 9 + 144 + 192}}}};
  check_case(c);
}

TEST_CASE("saved tensors: in-place ops and custom Functions", "[derivatives][saved]") {
  Tensor a = f64({2, 3}, 23), r = f64({3}, 24);
  const std::vector<Case> cases = {
      // other for self's gradient; a copy of self's old value (48 bytes) for other's
      {"mul_", {a, r}, [](const V& v) { Tensor h = v[0]; return h.mul_(v[1]); },
       {{1, {1, 24, 72}}, {2, {1, 48, 96}}, {3, {2, 72, 120}}}},
      {"add_", {a, r}, [](const V& v) { Tensor h = v[0]; return h.add_(v[1]); },
       {{1, {0, 0, 48}}, {2, {0, 0, 48}}, {3, {0, 0, 48}}}},
      {"relu_", {a}, [](const V& v) { Tensor h = v[0]; return h.relu_(); }, {{1, {1, 48, 48}}}},
      // a Function saves what its forward asks for, whatever requires grad
      {"Function", {a, r}, [](const V& v) { return SaveBoth::apply(v[0], v[1]); },
       {{1, {2, 72, 120}}, {2, {2, 72, 120}}, {3, {2, 72, 120}}}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("saved tensors: the fused backward kernels (double backward)", "[derivatives][saved]") {
  // bit 0: grad_output, bit 1: the saved tensor of the first-order rule
  Tensor g = f64({2, 3}, 25), y = sigmoid(f64({2, 3}, 26)), x = f64({2, 3}, 27), relu_out = relu(f64({2, 3}, 28));
  const std::map<uint32_t, Saved> second_operand_for_first = {{1, {1, 48, 96}}, {2, {2, 96, 144}}, {3, {2, 96, 144}}};
  const std::vector<Case> cases = {
      {"sigmoid_backward", {g, y}, [](const V& v) { return sigmoid_backward(v[0], v[1]); }, second_operand_for_first},
      {"tanh_backward", {g, y}, [](const V& v) { return tanh_backward(v[0], v[1]); }, second_operand_for_first},
      {"silu_backward", {g, x}, [](const V& v) { return silu_backward(v[0], v[1]); }, second_operand_for_first},
      {"gelu_backward", {g, x}, [](const V& v) { return gelu_backward(v[0], v[1]); }, second_operand_for_first},
      {"_softmax_backward_data", {g, y}, [](const V& v) { return _softmax_backward_data(v[0], v[1], 1); },
       second_operand_for_first},
      {"_log_softmax_backward_data", {g, y}, [](const V& v) { return _log_softmax_backward_data(v[0], v[1], 1); },
       second_operand_for_first},
      // piecewise constant in self: self is read by grad_output's gradient only
      {"threshold_backward", {g, relu_out}, [](const V& v) { return threshold_backward(v[0], v[1], 0.0); },
       {{1, {1, 48, 96}}, {2, {0, 0, 48}}, {3, {1, 48, 96}}}},
  };
  for (const Case& c : cases) check_case(c);
}

TEST_CASE("gradients under every requires_grad combination match gradcheck", "[derivatives][saved][gradcheck]") {
  // Each rule computes only the gradients needed, reading only what it saved for them.
  std::vector<std::pair<const char*, std::pair<Fn, V>>> ops = {
      {"mul", {[](auto& v) { return mul(v[0], v[1]); }, {leaf({2, 3}, 1), leaf({3}, 2)}}},
      {"div", {[](auto& v) { return div(v[0], v[1]); }, {leaf({2, 3}, 3), positive_leaf({3}, 4)}}},
      {"addmm", {[](auto& v) { return addmm(v[0], v[1], v[2]); }, {leaf({4}, 5), leaf({2, 3}, 6), leaf({3, 4}, 7)}}},
      {"bmm", {[](auto& v) { return bmm(v[0], v[1]); }, {leaf({2, 2, 3}, 8), leaf({2, 3, 2}, 9)}}},
      {"layer_norm", {[](auto& v) { return layer_norm(v[0], {3}, v[1], v[2]); }, {leaf({2, 3}, 10), leaf({3}, 11), leaf({3}, 12)}}},
      {"rms_norm", {[](auto& v) { return rms_norm(v[0], {3}, v[1]); }, {leaf({2, 3}, 13), leaf({3}, 14)}}},
      {"sdpa", {[](auto& v) { return scaled_dot_product_attention(v[0], v[1], v[2], true); },
                {leaf({1, 3, 2}, 15), leaf({1, 3, 2}, 16), leaf({1, 3, 2}, 17)}}},
      {"maximum", {[](auto& v) { return maximum(v[0], v[1]); }, {leaf({2, 3}, 18), leaf({2, 3}, 19)}}},
      {"sigmoid_backward", {[](auto& v) { return sigmoid_backward(v[0], v[1]); }, {leaf({2, 3}, 20), leaf({2, 3}, 21)}}},
      {"gelu_backward tanh", {[](auto& v) { return gelu_backward(v[0], v[1], "tanh"); }, {leaf({2, 3}, 22), leaf({2, 3}, 23)}}},
      {"_softmax_backward_data", {[](auto& v) { return _softmax_backward_data(v[0], v[1], 1); },
                                  {leaf({2, 3}, 24), leaf({2, 3}, 25)}}},
      {"_log_softmax_backward_data", {[](auto& v) { return _log_softmax_backward_data(v[0], v[1], 1); },
                                      {leaf({2, 3}, 26), leaf({2, 3}, 27)}}},
      {"cross_entropy_backward", {[](auto& v) { return cross_entropy_backward(v[0], v[1], tensor({2, 0}, {2}, kLong)); },
                                  {leaf({}, 28), leaf({2, 3}, 29)}}},
  };
  for (auto& [name, op] : ops) {
    auto& [fn, inputs] = op;
    for (uint32_t mask = 1; mask < (1u << inputs.size()); ++mask) {
      INFO(name << ", inputs requiring grad (bits): " << mask);
      V in;
      for (size_t i = 0; i < inputs.size(); ++i) in.push_back(inputs[i].detach().requires_grad_(((mask >> i) & 1u) != 0));
      REQUIRE(gradcheck1(fn, in));
      REQUIRE(gradgradcheck1(fn, in));
    }
  }
}
}  // namespace saving
