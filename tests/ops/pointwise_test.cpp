// Tests ops/pointwise.cpp: elementwise ops (values, broadcasting, type promotion, gradients,
// in-place semantics, bf16, Meta) and their derivative rules (ops/pointwise_defs.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>

#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {
const double kE = std::exp(1.0);
const double kPi = std::acos(-1.0);
}  // namespace

// ---------------------------------------------------------------------------------------------
// forward values
// ---------------------------------------------------------------------------------------------

TEST_CASE("binary ops: values on same-shape inputs", "[pointwise]") {
  Tensor a = tensor({1, 2, 3, 4}, {2, 2});
  Tensor b = tensor({10, 20, -30, 0.5}, {2, 2});
  check_values(add(a, b), {11, 22, -27, 4.5});
  check_values(sub(a, b), {-9, -18, 33, 3.5});
  check_values(mul(a, b), {10, 40, -90, 2});
  check_values(div(a, b), {0.1, 0.1, -0.1, 8});
  check_values(a + b, {11, 22, -27, 4.5});
  check_values(a - b, {-9, -18, 33, 3.5});
  check_values(a * b, {10, 40, -90, 2});
  check_values(a / b, {0.1, 0.1, -0.1, 8});
  check_values(-a, {-1, -2, -3, -4});
}

TEST_CASE("binary ops broadcast by PyTorch's rules", "[pointwise]") {
  // a: [2,1,3], b: [4,1] -> out [2,4,3], out[i][j][k] = a[i][0][k] (op) b[j][0]
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 1, 3});
  Tensor b = tensor({10, 20, 30, 40}, {4, 1});
  Tensor s = add(a, b);
  REQUIRE(s.sizes() == Shape{2, 4, 3});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) want.push_back((i * 3 + k + 1) + 10.0 * (j + 1));
  check_values(s, want);
  // the other order, and sub/mul/div element spot checks
  REQUIRE(add(b, a).sizes() == Shape{2, 4, 3});
  Tensor d = sub(b, a);
  REQUIRE(d.sizes() == Shape{2, 4, 3});
  CHECK(d.to_vector()[1 * 12 + 2 * 3 + 1] == Approx(30 - 5));  // b[2] - a[1][0][1]
  Tensor m = mul(a, b);
  CHECK(m.to_vector()[0 * 12 + 3 * 3 + 2] == Approx(3 * 40));
  Tensor q = div(a, b);
  CHECK(q.to_vector()[1 * 12 + 0 * 3 + 0] == Approx(4.0 / 10));
  // a 0-d tensor broadcasts against anything
  check_values(mul(tensor({1, 2, 3}, {3}), scalar_tensor(2.0)), {2, 4, 6});
  REQUIRE(add(scalar_tensor(1.0), scalar_tensor(2.0)).dim() == 0);
  // size-0 dims broadcast too
  REQUIRE(add(zeros({0, 3}), zeros({1, 3})).sizes() == Shape{0, 3});
}

TEST_CASE("binary ops read strided inputs: transposed, stepped, expanded", "[pointwise]") {
  Tensor base = tensor({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor t = base.t();  // [3,2]: [[0,3],[1,4],[2,5]]
  REQUIRE_FALSE(t.is_contiguous());
  check_values(add(t, ones({3, 2})), {1, 4, 2, 5, 3, 6});
  check_values(mul(t, t), {0, 9, 1, 16, 4, 25});
  Tensor stepped = base.slice(1, 0, 3, 2);  // [[0,2],[3,5]]
  check_values(sub(stepped, tensor({1, 1}, {2})), {-1, 1, 2, 4});
  Tensor e = tensor({1, 2}, {2, 1}).expand({2, 3});
  check_values(mul(e, base), {0, 1, 2, 6, 8, 10});
  // out-of-order mixes: transposed with expanded
  check_values(add(t, tensor({100, 200}, {2})), {100, 203, 101, 204, 102, 205});
}

TEST_CASE("binary ops promote dtypes", "[pointwise]") {
  Tensor f = tensor({1.5, 2.5}, {2});
  Tensor d = tensor({1, 2}, {2}, kDouble);
  Tensor l = tensor({3, 4}, {2}, kLong);
  Tensor h = tensor({1, 2}, {2}, kBFloat16);
  CHECK(add(f, d).dtype() == kDouble);
  CHECK(add(l, f).dtype() == kFloat);
  CHECK(add(l, l).dtype() == kLong);
  CHECK(add(h, f).dtype() == kFloat);
  CHECK(add(h, h).dtype() == kBFloat16);
  CHECK(mul(h, l).dtype() == kBFloat16);
  check_values(add(l, f), {4.5, 6.5});
  check_values(mul(l, l), {9, 16});
  check_values(sub(l, d), {2, 2});
}

TEST_CASE("div is true division for integer tensors (PyTorch semantics)", "[pointwise]") {
  Tensor a = tensor({7, -7, 1}, {3}, kLong);
  Tensor b = tensor({2, 2, 0}, {3}, kLong);
  Tensor q = div(a, b);
  CHECK(q.dtype() == kFloat);
  check_values(q, {3.5, -3.5, INFINITY});
  Tensor qs = div(a, 2.0);
  CHECK(qs.dtype() == kFloat);
  check_values(qs, {3.5, -3.5, 0.5});
  CHECK(div(meta({3}, kLong), meta({3}, kLong)).dtype() == kFloat);
  CHECK(div(meta({3}, kLong), 2.0).dtype() == kFloat);
}

TEST_CASE("scalar ops: values, dtype, and promotion of integer tensors", "[pointwise]") {
  Tensor a = tensor({1, -2, 4}, {3});
  check_values(add(a, 0.5), {1.5, -1.5, 4.5});
  check_values(mul(a, -2.0), {-2, 4, -8});
  check_values(div(a, 4.0), {0.25, -0.5, 1});
  check_values(a + 1.0, {2, -1, 5});
  check_values(a - 1.0, {0, -3, 3});
  check_values(a * 3.0, {3, -6, 12});
  check_values(a / 2.0, {0.5, -1, 2});
  check_values(1.0 + a, {2, -1, 5});
  check_values(1.0 - a, {0, 3, -3});
  check_values(3.0 * a, {3, -6, 12});
  check_values(2.0 / a, {2, -1, 0.5});
  // the scalar does not promote a floating tensor
  CHECK(mul(tensor({1}, {1}, kBFloat16), 3.0).dtype() == kBFloat16);
  CHECK(add(tensor({1}, {1}, kDouble), 3.0).dtype() == kDouble);
  // an integral scalar keeps an integer tensor integral; a fractional one promotes to float
  Tensor l = tensor({1, 2, 3}, {3}, kLong);
  CHECK(add(l, 2.0).dtype() == kLong);
  check_values(add(l, 2.0), {3, 4, 5});
  CHECK(mul(l, 0.5).dtype() == kFloat);
  check_values(mul(l, 0.5), {0.5, 1, 1.5});
  CHECK(add(l, 0.25).dtype() == kFloat);
  check_values(add(l, 0.25), {1.25, 2.25, 3.25});
  CHECK(mul(meta({2}, kLong), 0.5).dtype() == kFloat);
  CHECK(mul(meta({2}, kLong), 2.0).dtype() == kLong);
}

TEST_CASE("pow: values for several exponents", "[pointwise]") {
  Tensor a = tensor({1, 2, 4}, {3});
  check_values(pow(a, 2.0), {1, 4, 16});
  check_values(pow(a, 3.0), {1, 8, 64});
  check_values(pow(a, 0.5), {1, std::sqrt(2.0), 2});
  check_values(pow(a, -1.0), {1, 0.5, 0.25});
  check_values(pow(a, 0.0), {1, 1, 1});
  check_values(a.pow(2.0), {1, 4, 16});
  // x^1 is x, NaN and -0 included (PyTorch copies)
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor odd = tensor({-0.0f, nan, -3.5f, 1e-40f}, {4});
  Tensor one = pow(odd, 1.0);
  CHECK(std::signbit(one.data_ptr<float>()[0]));
  CHECK(std::isnan(one.data_ptr<float>()[1]));
  CHECK(one.data_ptr<float>()[2] == -3.5f);
  CHECK(one.data_ptr<float>()[3] == 1e-40f);
}

TEST_CASE("pow at signed zeros, inf and negative numbers gives PyTorch's values, its special cases included",
          "[pointwise]") {
  // PyTorch 2.15, torch.pow(x, e) on the CPU for x = [-0, 0, -inf, inf, -4, 4] (float): 0.5 and
  // -0.5 are its sqrt and rsqrt (std::pow gives +0 and +inf at -0, +inf and +0 at -inf), -1 the
  // reciprocal, 2, 3 and -2 products, others std::pow.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<double> x = {-0.0, 0.0, -inf, inf, -4, 4};
  const std::vector<std::pair<double, std::vector<double>>> cases = {
      {0.5, {-0.0, 0.0, nan, inf, nan, 2.0}},      {-0.5, {-inf, inf, nan, 0.0, nan, 0.5}},
      {-1.0, {-inf, inf, -0.0, 0.0, -0.25, 0.25}}, {2.0, {0.0, 0.0, inf, inf, 16.0, 16.0}},
      {3.0, {-0.0, 0.0, -inf, inf, -64.0, 64.0}},  {-2.0, {inf, inf, 0.0, 0.0, 0.0625, 0.0625}},
      {2.5, {0.0, 0.0, inf, inf, nan, 32.0}},
  };
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    // 0.5 and -0.5 run sqrt's and rsqrt's own kernels: the same bits on a row long enough for their vectors
    Tensor row = add(mul(abs(randn_seeded({100}, 5, dt)), 3.0), 0.01);  // positive: values equal iff bits equal
    CHECK(pow(row, 0.5).to(kDouble).to_vector() == sqrt(row).to(kDouble).to_vector());
    CHECK(pow(row, -0.5).to(kDouble).to_vector() == rsqrt(row).to(kDouble).to_vector());
    for (const auto& [e, want] : cases) {
      const std::vector<double> got = pow(tensor(x, {6}, dt), e).to(kDouble).to_vector();
      for (size_t i = 0; i < x.size(); ++i) {
        INFO(toString(dt) << ": pow(" << x[i] << ", " << e << ") = " << got[i] << ", PyTorch " << want[i]);
        if (std::isnan(want[i])) {
          CHECK(std::isnan(got[i]));
        } else {
          CHECK(got[i] == want[i]);
          CHECK(std::signbit(got[i]) == std::signbit(want[i]));
        }
      }
    }
  }
}

TEST_CASE("unary ops: values", "[pointwise]") {
  check_values(neg(tensor({1, -2, 0}, {3})), {-1, 2, 0});
  check_values(exp(tensor({0, 1, -1}, {3})), {1, kE, 1 / kE});
  check_values(log(tensor({1, kE, 0.5}, {3})), {0, 1, std::log(0.5)});
  check_values(sin(tensor({0, kPi / 2, -kPi / 6}, {3})), {0, 1, -0.5});
  check_values(cos(tensor({0, kPi, kPi / 3}, {3})), {1, -1, 0.5});
  check_values(tanh(tensor({0, 1, -2}, {3})), {0, 0.7615941559557649, -0.9640275800758169});
  check_values(sigmoid(tensor({0, 2, -2}, {3})), {0.5, 0.8807970779778823, 0.11920292202211755});
  check_values(relu(tensor({-1, 0, 2.5}, {3})), {0, 0, 2.5});
  check_values(silu(tensor({0, 1, -1}, {3})), {0, 0.7310585786300049, -0.2689414213699951});
  check_values(sqrt(tensor({4, 2, 0}, {3})), {2, std::sqrt(2.0), 0});
  check_values(rsqrt(tensor({4, 0.25, 1}, {3})), {0.5, 2, 1});
  check_values(abs(tensor({-3, 0, 2}, {3})), {3, 0, 2});
  // gelu(x) = x * Phi(x); tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  check_values(gelu(tensor({0, 1, -1, 3}, {4})), {0, 0.8413447460685429, -0.15865525393145707, 2.9959502});
  check_values(gelu(tensor({0, 1, -1}, {3}), "tanh"), {0, 0.8411919906082768, -0.15880800939172324});
  // the methods
  Tensor x = tensor({1, 4}, {2});
  check_values(x.sqrt(), {1, 2});
  check_values(x.neg(), {-1, -4});
  check_values(x.log(), {0, std::log(4.0)});
  check_values(x.exp(), {kE, std::exp(4.0)}, 1e-6);
  check_values(x.rsqrt(), {1, 0.5});
  check_values(x.abs(), {1, 4});
  check_values(x.relu(), {1, 4});
  check_values(x.silu(), {1 / (1 + std::exp(-1.0)), 4 / (1 + std::exp(-4.0))});
  check_values(x.sigmoid(), {1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(-4.0))});
  check_values(x.tanh(), {std::tanh(1.0), std::tanh(4.0)});
  check_values(x.sin(), {std::sin(1.0), std::sin(4.0)});
  check_values(x.cos(), {std::cos(1.0), std::cos(4.0)});
}

TEST_CASE("unary ops on strided and large inputs match the contiguous result", "[pointwise]") {
  // large enough for the parallel and vectorised paths
  Tensor base = randn_seeded({64, 130}, 3, kFloat);
  Tensor t = base.t();
  Tensor st = base.slice(1, 1, 130, 3);
  for (auto* f : {+[](const Tensor& x) { return sin(x); }, +[](const Tensor& x) { return exp(x); },
                  +[](const Tensor& x) { return relu(x); }, +[](const Tensor& x) { return sigmoid(x); },
                  +[](const Tensor& x) { return gelu(x); }, +[](const Tensor& x) { return abs(x); }}) {
    check_close(f(t), f(t.contiguous()));
    check_close(f(st), f(st.contiguous()));
  }
  check_close(mul(t, t), mul(t.contiguous(), t.contiguous()));
  check_close(add(st, 1.0), add(st.contiguous(), 1.0));
}

TEST_CASE("unary, binary and fused backward ops give strided inputs the contiguous inputs' values, extremes included",
          "[pointwise]") {
  // The contiguous kernels (AVX-512, Eigen) and the loop over strided elements are separate code:
  // each op's formula must be the same in both. It was not for gelu's tanh form (below -3), nor
  // where Eigen's packet math parts from IEEE 754 (sqrt(inf) NaN, sqrt(-0) and -(+0) +0, the
  // sigmoid 4.9e-4 off near -9). Values where formulas part ways: saturation, overflow, signed
  // zeros, inf and NaN; on long rows, so that the vector loops run.
  // 1e-40: subnormal in float; exp(-90) is subnormal, exp(88.7) the float range's top
  const std::vector<double> special = {-1e4, -100, -90, -20, -10, -6, -3.5, -1, -1e-3, -1e-40, -0.0, 0.0, 1e-40, 1e-3,
                                       0.5, 1, 3.5, 6, 10, 20, 88.7, 100, 1e4, std::numeric_limits<double>::infinity(),
                                       -std::numeric_limits<double>::infinity(), std::nan("")};
  const int64_t n = 2 * 64;  // rows of 64: 4 vectors of 16 floats in the contiguous kernels
  std::vector<double> v(2 * n), w(2 * n);
  for (int64_t i = 0; i < 2 * n; ++i) {
    v[i] = special[static_cast<size_t>(i) % special.size()];
    w[i] = special[static_cast<size_t>(i * 7 + 3) % special.size()];
  }
  using Unary = std::function<Tensor(const Tensor&, const Tensor&)>;  // (x, second input)
  const std::vector<std::pair<const char*, Unary>> ops = {
      {"neg", [](auto& x, auto&) { return neg(x); }},
      {"exp", [](auto& x, auto&) { return exp(x); }},
      {"log", [](auto& x, auto&) { return log(x); }},
      {"sin", [](auto& x, auto&) { return sin(x); }},
      {"cos", [](auto& x, auto&) { return cos(x); }},
      {"tanh", [](auto& x, auto&) { return tanh(x); }},
      {"sigmoid", [](auto& x, auto&) { return sigmoid(x); }},
      {"relu", [](auto& x, auto&) { return relu(x); }},
      {"silu", [](auto& x, auto&) { return silu(x); }},
      {"gelu", [](auto& x, auto&) { return gelu(x); }},
      {"gelu (tanh)", [](auto& x, auto&) { return gelu(x, "tanh"); }},
      {"sqrt", [](auto& x, auto&) { return sqrt(x); }},
      {"rsqrt", [](auto& x, auto&) { return rsqrt(x); }},
      {"abs", [](auto& x, auto&) { return abs(x); }},
      {"threshold_backward", [](auto& x, auto& g) { return threshold_backward(g, x, 0.0); }},
      {"sigmoid_backward", [](auto& x, auto& g) { return sigmoid_backward(g, x); }},
      {"tanh_backward", [](auto& x, auto& g) { return tanh_backward(g, x); }},
      {"silu_backward", [](auto& x, auto& g) { return silu_backward(g, x); }},
      {"gelu_backward", [](auto& x, auto& g) { return gelu_backward(g, x); }},
      {"gelu_backward (tanh)", [](auto& x, auto& g) { return gelu_backward(g, x, "tanh"); }},
      {"add", [](auto& x, auto& g) { return add(x, g); }},
      {"sub", [](auto& x, auto& g) { return sub(x, g); }},
      {"mul", [](auto& x, auto& g) { return mul(x, g); }},
      {"div", [](auto& x, auto& g) { return div(x, g); }},
      {"maximum", [](auto& x, auto& g) { return maximum(x, g); }},
      {"minimum", [](auto& x, auto& g) { return minimum(x, g); }},
      {"add (a number)", [](auto& x, auto&) { return add(x, -0.0); }},
      {"mul (a number)", [](auto& x, auto&) { return mul(x, -1.5); }},
      {"div (a number)", [](auto& x, auto&) { return div(x, 3.0); }},
      {"pow 2", [](auto& x, auto&) { return pow(x, 2.0); }},
      {"pow 0.5", [](auto& x, auto&) { return pow(x, 0.5); }},
      {"pow -1", [](auto& x, auto&) { return pow(x, -1.0); }},
      {"pow 2.5", [](auto& x, auto&) { return pow(x, 2.5); }},
  };
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    // float's contiguous kernels take exp16 and Eigen's packet functions (within a few ulp of the
    // strided loop's std:: functions); bfloat16 rounds both to 8 bits
    const double tol = dt == kDouble ? 1e-13 : dt == kFloat ? 1e-5 : 1e-2;
    Tensor x = tensor(v, {n, 2}, dt).t(), g = tensor(w, {n, 2}, dt).t();  // [2, n], strides (1, 2)
    REQUIRE_FALSE(x.is_contiguous());
    for (const auto& [name, f] : ops) {
      Tensor got = f(x, g).to(kDouble).contiguous(), want = f(x.contiguous(), g.contiguous()).to(kDouble);
      const double* a = got.data_ptr<double>();
      const double* b = want.data_ptr<double>();
      for (int64_t i = 0; i < 2 * n; ++i) {
        const double xi = x.contiguous().to(kDouble).data_ptr<double>()[i];
        INFO(name << " " << (dt == kFloat ? "float" : dt == kDouble ? "double" : "bfloat16") << " at x = " << xi
                  << ": strided " << a[i] << ", contiguous " << b[i]);
        if (std::isnan(b[i]) || std::isinf(b[i]) || b[i] == 0) {
          CHECK((std::isnan(a[i]) == std::isnan(b[i]) && (std::isnan(b[i]) || a[i] == b[i])));
          if (b[i] == 0 && a[i] == 0) CHECK(std::signbit(a[i]) == std::signbit(b[i]));
        } else {
          // a few units of the last place of a subnormal: its precision is its own, not tol's
          const double floor = 4 * (dt == kDouble ? std::numeric_limits<double>::denorm_min()
                                    : dt == kFloat ? double(std::numeric_limits<float>::denorm_min())
                                                   : 9.2e-41);  // bfloat16's smallest subnormal
          CHECK(std::abs(a[i] - b[i]) <= tol * std::abs(b[i]) + floor);
        }
      }
    }
  }
}

TEST_CASE("gelu (tanh) and its backward on a strided input keep the contiguous kernels' precision",
          "[pointwise]") {
  // The strided loop computed 0.5 x (1 + tanh(u)), which loses digits for x < -3 (1 + tanh(u)
  // from a rounded tanh): 2.8e-4 relative near x = -6 in float. Both loops now compute
  // x / (1 + exp(-2u)) (kernels/gelu_constants.h), each within the float rounding of -2u of the
  // value (the same bound as kernels/cpu/activation_test's), strided or not.
  const int64_t n = 512;
  std::vector<double> v(2 * n);
  for (int64_t i = 0; i < 2 * n; ++i) v[i] = -10.0 + 12.0 * double(i) / double(2 * n - 1);  // [-10, 2]
  const double beta = 0.79788456080286535588, kappa = 0.044715;
  for (ScalarType dt : {kFloat, kDouble}) {
    const double tol = dt == kFloat ? 2e-5 : 1e-13;
    Tensor base = tensor(v, {n, 2}, dt);
    Tensor strided = base.t();  // [2, n], strides (1, 2)
    REQUIRE_FALSE(strided.is_contiguous());
    Tensor dense = strided.contiguous();
    Tensor g = mul(ones_like(dense), 0.75);
    Tensor xs = dense.to(kDouble);  // the inputs as rounded to dt
    for (bool is_strided : {true, false}) {
      const Tensor& x = is_strided ? strided : dense;
      Tensor y = gelu(x, "tanh").to(kDouble).contiguous(), gx = gelu_backward(g, x, "tanh").to(kDouble).contiguous();
      double worst = 0, worst_g = 0;
      for (int64_t i = 0; i < 2 * n; ++i) {
        const double xi = xs.data_ptr<double>()[i];
        const double e = std::exp(-2 * beta * (xi + kappa * xi * xi * xi)), r = 1 / (1 + e);
        const double want = xi * r, want_g = 0.75 * (r + 2 * beta * (1 + 3 * kappa * xi * xi) * xi * e * r * r);
        worst = std::max(worst, std::abs(y.data_ptr<double>()[i] - want) / std::abs(want));
        // relative where the derivative saturates (x < -2), absolute near its zero (x = -0.75)
        worst_g = std::max(worst_g, std::abs(gx.data_ptr<double>()[i] - want_g) / (xi < -2 ? std::abs(want_g) : 1.0));
      }
      INFO((dt == kFloat ? "float" : "double") << (is_strided ? " strided" : " contiguous")
                                               << ": worst relative error " << worst << ", backward " << worst_g);
      CHECK(worst < tol);
      CHECK(worst_g < tol);
    }
  }
}

TEST_CASE("integer and bool tensors: neg, abs, relu accept them; floating-only ops refuse", "[pointwise]") {
  Tensor l = tensor({-2, 3}, {2}, kLong);
  check_values(neg(l), {2, -3});
  check_values(abs(l), {2, 3});
  check_values(relu(l), {0, 3});
  CHECK(neg(l).dtype() == kLong);
  REQUIRE_THROWS_WITH(sin(l), Contains("aten::sin") && Contains("floating point") && Contains("Long"));
  REQUIRE_THROWS_WITH(exp(l), Contains("aten::exp") && Contains("Long"));
  REQUIRE_THROWS_WITH(gelu(l), Contains("aten::gelu") && Contains("Long"));
  REQUIRE_THROWS_WITH(pow(l, 2.0), Contains("aten::pow") && Contains("Long"));
  // the Meta kernels run the same checks as the CPU kernels
  REQUIRE_THROWS_WITH(sin(meta({2}, kLong)), Contains("aten::sin") && Contains("Long"));
  REQUIRE_THROWS_WITH(pow(meta({2}, kLong), 2.0), Contains("aten::pow") && Contains("Long"));
  CHECK(neg(meta({2}, kLong)).dtype() == kLong);
}

TEST_CASE("eq, where, masked_fill: values and broadcasting", "[pointwise]") {
  Tensor a = tensor({1, 2, 3}, {3});
  Tensor b = tensor({1, 5, 3}, {3});
  Tensor e = eq(a, b);
  CHECK(e.dtype() == kBool);
  check_values(e, {1, 0, 1});
  check_values(eq(tensor({1, 2}, {2, 1}), tensor({1, 2, 3}, {3})), {1, 0, 0, 0, 1, 0});
  check_values(eq(tensor({2}, {1}, kLong), tensor({2.0, 2.5}, {2})), {1, 0});

  Tensor cond = tensor({1, 0, 1}, {3}, kBool);
  check_values(where(cond, a, b), {1, 5, 3});
  // cond [2,1], a [3], b 0-d -> [2,3]
  Tensor c2 = tensor({1, 0}, {2, 1}, kBool);
  Tensor w = where(c2, a, scalar_tensor(-1.0));
  REQUIRE(w.sizes() == Shape{2, 3});
  check_values(w, {1, 2, 3, -1, -1, -1});
  CHECK(where(cond, a, tensor({0, 0, 0}, {3}, kDouble)).dtype() == kDouble);

  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  check_values(masked_fill(x, tensor({0, 1, 0, 1, 0, 0}, {2, 3}, kBool), -9), {1, -9, 3, -9, 5, 6});
  // a [3] mask broadcasts over rows; a [2,1] mask over columns
  check_values(x.masked_fill(tensor({1, 0, 0}, {3}, kBool), 0), {0, 2, 3, 0, 5, 6});
  check_values(masked_fill(x, tensor({0, 1}, {2, 1}, kBool), 7), {1, 2, 3, 7, 7, 7});
  // strided self
  check_values(masked_fill(x.t(), tensor({1, 0}, {2}, kBool), 0), {0, 4, 0, 5, 0, 6});
}

TEST_CASE("where and masked_fill on long rows (the vectorised loops) follow the element rule", "[pointwise]") {
  // Rows of 37 (a vector loop plus a tail) with a causal mask broadcast over a leading dim, a
  // per-row mask (broadcast within each run), and where on three full operands; float and double.
  const int64_t R = 5, C = 37;
  for (ScalarType dt : {kFloat, kDouble}) {
    INFO(toString(dt));
    Tensor x = arange(2 * R * C, TensorOptions().dtype(dt)).view({2, R, C});
    Tensor y = neg(x);
    Tensor causal = triu(ones({R, C}, TensorOptions().dtype(kBool)), 1);
    Tensor per_row = tensor({1, 0, 1, 0, 0}, {R, 1}, kBool);
    const std::vector<double> xs = x.to_vector(), ms = masked_fill(x, causal, -7.5).to_vector(),
                              rs = masked_fill(x, per_row, 2.0).to_vector(), ws = where(causal, x, y).to_vector();
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < C; ++c) {
          const size_t i = static_cast<size_t>((b * R + r) * C + c);
          const bool future = c > r;
          CHECK(ms[i] == (future ? -7.5 : xs[i]));
          CHECK(rs[i] == (r == 0 || r == 2 ? 2.0 : xs[i]));
          CHECK(ws[i] == (future ? xs[i] : -xs[i]));
        }
  }
}

TEST_CASE("fused backward kernels: values", "[pointwise]") {
  Tensor g = tensor({1, 2, 3}, {3});
  check_values(threshold_backward(g, tensor({-1, 0, 0.5}, {3}), 0.0), {0, 0, 3});
  Tensor y = tensor({0.5, 0.25, 0.9}, {3});
  check_values(sigmoid_backward(g, y), {0.25, 2 * 0.1875, 3 * 0.09});
  check_values(tanh_backward(g, y), {0.75, 2 * 0.9375, 3 * 0.19});
  // silu'(x) = s (1 + x (1 - s)); gelu'(x) = Phi(x) + x phi(x)
  double s1 = 1 / (1 + std::exp(-1.0));
  check_values(silu_backward(g, tensor({0, 1, -1}, {3})), {0.5, 2 * s1 * (1 + (1 - s1)), 3 * (1 - s1) * (1 - (s1))});
  double phi1 = std::exp(-0.5) / std::sqrt(2 * kPi);
  check_values(gelu_backward(g, tensor({0, 1, -1}, {3})), {0.5, 2 * (0.8413447460685429 + phi1),
                                                          3 * (0.15865525393145707 - phi1)});
}

// ---------------------------------------------------------------------------------------------
// gradients
// ---------------------------------------------------------------------------------------------

TEST_CASE("binary ops: gradients are reduced back to each input's shape", "[pointwise][autograd]") {
  Tensor a = from_vector({1, 2, 3, 4, 5, 6}, {2, 1, 3}, TensorOptions().dtype(kDouble).requires_grad(true));
  Tensor b = from_vector({1, 2, 3, 4}, {4, 1}, TensorOptions().dtype(kDouble).requires_grad(true));
  mul(a, b).sum().backward();
  REQUIRE(a.grad().sizes() == Shape{2, 1, 3});
  REQUIRE(b.grad().sizes() == Shape{4, 1});
  check_values(a.grad(), std::vector<double>(6, 10.0));          // sum of b
  check_values(b.grad(), std::vector<double>(4, 21.0));          // sum of a
  Tensor c = from_vector({2}, {}, TensorOptions().dtype(kDouble).requires_grad(true));
  Tensor x = from_vector({1, 2, 3}, {3}, TensorOptions().dtype(kDouble).requires_grad(true));
  div(x, c).sum().backward();
  REQUIRE(c.grad().dim() == 0);
  check_values(c.grad(), {-6.0 / 4});
  check_values(x.grad(), {0.5, 0.5, 0.5});
  // a float32 input combined with a float64 one gets a float32 gradient
  Tensor f = from_vector({1, 2}, {2}, TensorOptions().dtype(kFloat).requires_grad(true));
  Tensor d = from_vector({3, 4}, {2}, TensorOptions().dtype(kDouble).requires_grad(true));
  mul(f, d).sum().backward();
  CHECK(f.grad().dtype() == kFloat);
  CHECK(d.grad().dtype() == kDouble);
  check_values(f.grad(), {3, 4});
}

TEST_CASE("gradcheck: binary ops with broadcasting and strided inputs", "[pointwise][gradcheck]") {
  Tensor a = leaf({2, 1, 3}, 1), b = leaf({4, 1}, 2);
  Tensor bp = positive_leaf({4, 1}, 3);
  REQUIRE(gradcheck1([](auto& x) { return add(x[0], x[1]); }, {a, b}));
  REQUIRE(gradcheck1([](auto& x) { return sub(x[0], x[1]); }, {a, b}));
  REQUIRE(gradcheck1([](auto& x) { return mul(x[0], x[1]); }, {a, b}));
  REQUIRE(gradcheck1([](auto& x) { return div(x[0], x[1]); }, {a, bp}));
  // transposed and stepped leaves, and an expanded operand
  Tensor t = transposed_leaf({3, 4}, 4), s = stepped_leaf({3, 4}, 5), r = leaf({4}, 6);
  REQUIRE(gradcheck1([](auto& x) { return mul(x[0], x[1]); }, {t, s}));
  REQUIRE(gradcheck1([](auto& x) { return sub(x[0], x[1].expand({3, 4})); }, {t, r}));
  REQUIRE(gradcheck1([](auto& x) { return div(x[0], add(x[1].abs(), 1.0)); }, {s, t}));
  // one side not requiring grad
  Tensor nog = randn_seeded({3, 4}, 7);
  REQUIRE(gradcheck1([](auto& x) { return mul(x[0], x[1]); }, {t, nog}));
  REQUIRE(gradcheck1([](auto& x) { return div(x[1], x[0]); }, {positive_leaf({3, 4}, 8), nog}));
  REQUIRE(gradcheck1([](auto& x) { return add(x[0], x[1]); }, {t, nog}));
  REQUIRE(gradcheck1([](auto& x) { return add(x[1], x[0]); }, {t, nog}));
  REQUIRE(gradcheck1([](auto& x) { return sub(x[0], x[1]); }, {t, nog}));
  REQUIRE(gradcheck1([](auto& x) { return sub(x[1], x[0]); }, {t, nog}));
  REQUIRE(gradcheck1([](auto& x) { return add(x[0], x[1]); }, {r, nog}));
}

TEST_CASE("gradcheck: scalar ops and pow", "[pointwise][gradcheck]") {
  Tensor t = transposed_leaf({3, 2}, 11);
  Tensor p = positive_leaf({2, 3}, 12);
  REQUIRE(gradcheck1([](auto& x) { return add(x[0], 2.5); }, {t}));
  REQUIRE(gradcheck1([](auto& x) { return mul(x[0], -1.5); }, {t}));
  REQUIRE(gradcheck1([](auto& x) { return div(x[0], 4.0); }, {t}));
  REQUIRE(gradcheck1([](auto& x) { return 1.0 - x[0]; }, {t}));
  REQUIRE(gradcheck1([](auto& x) { return 2.0 / x[0]; }, {p}));
  for (double e : {2.0, 3.0, 0.5, -1.0, -2.5, 1.0})
    REQUIRE(gradcheck1([e](auto& x) { return pow(x[0], e); }, {p}));
  REQUIRE(gradcheck1([](auto& x) { return pow(x[0], 2.0); }, {stepped_leaf({2, 3}, 13)}));
  // exponent 0: the gradient is zero
  Tensor z = leaf({3}, 14);
  pow(z, 0.0).sum().backward();
  check_values(z.grad(), {0, 0, 0});
}

TEST_CASE("gradcheck: unary ops on contiguous and strided inputs", "[pointwise][gradcheck]") {
  std::vector<std::pair<const char*, Fn>> ops = {
      {"neg", [](auto& x) { return neg(x[0]); }},       {"exp", [](auto& x) { return exp(x[0]); }},
      {"sin", [](auto& x) { return sin(x[0]); }},       {"cos", [](auto& x) { return cos(x[0]); }},
      {"tanh", [](auto& x) { return tanh(x[0]); }},     {"sigmoid", [](auto& x) { return sigmoid(x[0]); }},
      {"relu", [](auto& x) { return relu(x[0]); }},     {"silu", [](auto& x) { return silu(x[0]); }},
      {"abs", [](auto& x) { return abs(x[0]); }},       {"gelu", [](auto& x) { return gelu(x[0]); }},
      {"gelu_tanh", [](auto& x) { return gelu(x[0], "tanh"); }},
  };
  // relu and abs have a kink at 0: random normal values stay away from it
  Tensor c = leaf({2, 3}, 21), t = transposed_leaf({3, 4}, 22), s = stepped_leaf({2, 3}, 23);
  for (auto& [name, fn] : ops) {
    INFO(name);
    REQUIRE(gradcheck1(fn, {c}));
    REQUIRE(gradcheck1(fn, {t}));
    REQUIRE(gradcheck1(fn, {s}));
    Tensor r = leaf({3, 1}, 24);
    REQUIRE(gradcheck1([&fn](auto& x) { return fn({x[0].expand({3, 4})}); }, {r}));
  }
  std::vector<std::pair<const char*, Fn>> positive_ops = {
      {"log", [](auto& x) { return log(x[0]); }},
      {"sqrt", [](auto& x) { return sqrt(x[0]); }},
      {"rsqrt", [](auto& x) { return rsqrt(x[0]); }},
  };
  Tensor p = positive_leaf({3, 4}, 25);
  Tensor pt = transpose(p, 0, 1).detach().requires_grad_();
  for (auto& [name, fn] : positive_ops) {
    INFO(name);
    REQUIRE(gradcheck1(fn, {p}));
    REQUIRE(gradcheck1(fn, {pt}));
  }
}

TEST_CASE("abs and relu gradients at 0 are 0 (PyTorch's subgradient)", "[pointwise][autograd]") {
  Tensor x = from_vector({-2, 0, 3}, {3}, TensorOptions().dtype(kDouble).requires_grad(true));
  abs(x).sum().backward();
  check_values(x.grad(), {-1, 0, 1});
  Tensor y = from_vector({-2, 0, 3}, {3}, TensorOptions().dtype(kDouble).requires_grad(true));
  relu(y).sum().backward();
  check_values(y.grad(), {0, 0, 1});
}

TEST_CASE("gradcheck: where and masked_fill", "[pointwise][gradcheck]") {
  Tensor cond = tensor({1, 0, 0, 1, 1, 0}, {2, 3}, kBool);
  Tensor a = leaf({2, 3}, 31), b = leaf({3}, 32);
  REQUIRE(gradcheck1([cond](auto& x) { return where(cond, x[0], x[1]); }, {a, b}));
  REQUIRE(gradcheck1([cond](auto& x) { return where(cond.t(), x[0], x[1]); }, {transposed_leaf({3, 2}, 33), leaf({2}, 34)}));
  Tensor mask = tensor({0, 1, 1}, {3}, kBool);
  REQUIRE(gradcheck1([mask](auto& x) { return masked_fill(x[0], mask, 3.0); }, {a}));
  REQUIRE(gradcheck1([mask](auto& x) { return masked_fill(x[0], mask, -1.0); }, {stepped_leaf({2, 3}, 35)}));
  // gradient values: masked elements get none
  Tensor v = from_vector({1, 2, 3}, {3}, TensorOptions().dtype(kDouble).requires_grad(true));
  mul(masked_fill(v, mask, 0.0), 2.0).sum().backward();
  check_values(v.grad(), {2, 0, 0});
}

TEST_CASE("gradgradcheck: mul and sin", "[pointwise][gradcheck]") {
  REQUIRE(gradgradcheck1([](auto& x) { return mul(x[0], x[1]); }, {leaf({2, 1, 3}, 41), leaf({4, 1}, 42)}));
  REQUIRE(gradgradcheck1([](auto& x) { return sin(x[0]); }, {transposed_leaf({3, 2}, 43)}));
  // the double-backward rules of the fused backward kernels
  REQUIRE(gradgradcheck1([](auto& x) { return tanh(x[0]); }, {leaf({4}, 44)}));
  REQUIRE(gradgradcheck1([](auto& x) { return sigmoid(x[0]); }, {leaf({4}, 45)}));
  REQUIRE(gradgradcheck1([](auto& x) { return div(x[0], x[1]); }, {leaf({3}, 46), positive_leaf({3}, 47)}));
  REQUIRE(gradgradcheck1([](auto& x) { return exp(x[0]); }, {leaf({3}, 48)}));
}

// ---------------------------------------------------------------------------------------------
// in-place ops
// ---------------------------------------------------------------------------------------------

TEST_CASE("in-place add_/mul_/relu_: values, broadcasting of other, version bump", "[pointwise][inplace]") {
  Tensor x = tensor({1, -2, 3, -4}, {2, 2});
  int64_t v0 = x._version();
  x.add_(tensor({10, 20}, {2}));
  check_values(x, {11, 18, 13, 16});
  CHECK(x._version() == v0 + 1);
  x.mul_(tensor({-1, 2}, {2, 1}));
  check_values(x, {-11, -18, 26, 32});
  CHECK(x._version() == v0 + 2);
  x.relu_();
  check_values(x, {0, 0, 26, 32});
  CHECK(x._version() == v0 + 3);
  x.add_(1.0);
  x.mul_(0.5);
  check_values(x, {0.5, 0.5, 13.5, 16.5});
  CHECK(x._version() == v0 + 5);
  // the functional forms return self
  Tensor& r = add_(x, 1.0);
  CHECK(r.is_same(x));
  // other may have another dtype (cast to self's)
  Tensor y = tensor({1, 2}, {2});
  y.add_(tensor({0.5, 0.5}, {2}, kDouble));
  CHECK(y.dtype() == kFloat);
  check_values(y, {1.5, 2.5});
  // self strided
  Tensor base = zeros({2, 3});
  Tensor col = base.slice(1, 1, 2);
  col.add_(tensor({5, 6}, {2, 1}));
  check_values(base, {0, 5, 0, 0, 6, 0});
}

TEST_CASE("in-place ops bump the version counter shared by views", "[pointwise][inplace][views]") {
  Tensor base = zeros({2, 3});
  Tensor v = base.view({3, 2});
  Tensor t = base.t();
  int64_t v0 = v._version();
  base.add_(1.0);
  CHECK(v._version() == v0 + 1);
  CHECK(t._version() == v0 + 1);
  t.mul_(2.0);  // no autograd: in-place on a view is fine
  CHECK(base._version() == v0 + 2);
  check_values(base, {2, 2, 2, 2, 2, 2});
}

TEST_CASE("in-place ops: error paths", "[pointwise][inplace][errors]") {
  Tensor x = zeros({2, 3});
  REQUIRE_THROWS_WITH(x.add_(zeros({4, 3})), Contains("aten::add_") && Contains("[2, 3]") && Contains("[4, 3]"));
  // other broadcasts to self, never self to other
  REQUIRE_THROWS_WITH(x.mul_(zeros({2, 2, 3})),
                      Contains("aten::mul_") && Contains("output with shape [2, 3]") && Contains("[2, 2, 3]"));
  Tensor l = zeros({2}, kLong);
  REQUIRE_THROWS_WITH(l.add_(zeros({2})), Contains("aten::add_") && Contains("Float") && Contains("Long"));
  REQUIRE_THROWS_WITH(l.add_(0.5), Contains("aten::add_.Scalar") && Contains("Long"));
  REQUIRE_THROWS_WITH(l.mul_(1.5), Contains("aten::mul_.Scalar") && Contains("Long"));
  REQUIRE_THROWS_WITH(meta({2}, kLong).mul_(1.5), Contains("aten::mul_.Scalar") && Contains("Long"));
  l.add_(2.0).mul_(3.0);  // integral scalars are fine
  check_values(l, {6, 6});
  // writing into an expanded tensor (several elements at one address) is refused
  Tensor e = zeros({1, 3}).expand({2, 3});
  for (const auto& f : std::vector<std::function<void()>>{[&] { e.add_(ones({2, 3})); }, [&] { e.mul_(ones({3})); },
                                                          [&] { e.add_(1.0); }, [&] { e.mul_(2.0); }, [&] { e.relu_(); }}) {
    REQUIRE_THROWS_WITH(f(), Contains("unsupported operation: more than one element of the written-to tensor refers to "
                                      "a single memory location") && Contains("strides [0, 1]"));
  }
  Tensor em = meta({1, 3}).expand({2, 3});
  REQUIRE_THROWS_WITH(em.add_(1.0), Contains("aten::add_.Scalar") && Contains("more than one element"));
  REQUIRE_THROWS_WITH(em.relu_(), Contains("aten::relu_") && Contains("more than one element"));
  REQUIRE_THROWS_WITH(em.mul_(meta({3})), Contains("aten::mul_") && Contains("more than one element"));
  zeros({3, 1}).expand({3, 1}).add_(1.0);  // size-1 dims may have any stride
  // autograd
  Tensor w = zeros({3}, TensorOptions().requires_grad(true));
  REQUIRE_THROWS_WITH(w.add_(ones({3})), Contains("a leaf Variable that requires grad is being used in an in-place operation"));
  REQUIRE_THROWS_WITH(w.mul_(2.0), Contains("a leaf Variable that requires grad is being used in an in-place operation"));
  REQUIRE_THROWS_WITH(w.relu_(), Contains("a leaf Variable that requires grad is being used in an in-place operation"));
  Tensor h = mul(w, 2.0);
  Tensor hv = h.view({3, 1});
  hv.add_(ones({3, 1}));  // a view of a non-leaf may be modified: its base's history becomes CopySlices
  REQUIRE(h.grad_fn()->name() == "CopySlices");
  REQUIRE_THROWS_WITH(w.slice(0, 0, 2).mul_(2.0), Contains("a view of a leaf Variable that requires grad is being "
                                                           "used in an in-place operation. (aten::mul_.Scalar"));
  // under no_grad the leaf may be updated in place (an optimizer step)
  {
    autograd::NoGradGuard no_grad;
    w.add_(ones({3}));
  }
  check_values(w, {1, 1, 1});
}

TEST_CASE("in-place ops on non-leaf tensors rebase history; gradients are right", "[pointwise][inplace][autograd]") {
  SECTION("add_ with a tensor that requires grad") {
    Tensor a = leaf({2, 3}, 51), b = leaf({3}, 52);
    Tensor h = mul(a, 2.0);
    auto old_fn = h.grad_fn();
    h.add_(b);
    CHECK(h.grad_fn() != old_fn);
    CHECK(h.grad_fn()->name().find("Add") != std::string::npos);
    mul(h, h).sum().backward();
    // d/da sum((2a + b)^2) = 4 (2a + b); d/db = sum over rows of 2 (2a + b)
    Tensor hv = add(mul(a.detach(), 2.0), b.detach());
    check_close(a.grad(), mul(hv, 4.0));
    check_close(b.grad(), sum(mul(hv, 2.0), {0}));
  }
  SECTION("gradcheck through add_/mul_/relu_ on non-leaf tensors") {
    REQUIRE(gradcheck1([](auto& x) { Tensor h = mul(x[0], 1.0); h.add_(x[1]); return h; }, {leaf({2, 3}, 53), leaf({3}, 54)}));
    REQUIRE(gradcheck1([](auto& x) { Tensor h = sin(x[0]); h.mul_(x[1]); return h; }, {leaf({2, 3}, 55), leaf({2, 1}, 56)}));
    REQUIRE(gradcheck1([](auto& x) { Tensor h = add(x[0], 0.0); h.mul_(3.0); h.add_(-1.0); return h; }, {leaf({4}, 57)}));
    Tensor k = randn_seeded({3}, 63);
    REQUIRE(gradcheck1([k](auto& x) { Tensor h = mul(x[0], 2.0); h.add_(k); h.mul_(k); return h; }, {leaf({2, 3}, 64)}));
    REQUIRE(gradcheck1([](auto& x) { Tensor h = mul(x[0], 2.0); h.relu_(); return mul(h, x[0]); }, {leaf({5}, 58)}));
    Tensor c = randn_seeded({2, 3}, 62);
    REQUIRE(gradcheck1([c](auto& x) { Tensor h = add(x[0], 0.0); h.mul_(c); return h; }, {transposed_leaf({2, 3}, 59)}));
  }
  SECTION("self not requiring grad, other requiring it") {
    Tensor a = zeros({3}, kDouble);
    Tensor b = leaf({3}, 60);
    a.add_(b);
    CHECK(a.requires_grad());
    mul(a, 3.0).sum().backward();
    check_values(b.grad(), {3, 3, 3});
  }
  SECTION("a tensor saved for backward and then modified in place is detected") {
    Tensor x = leaf({3}, 61);
    Tensor h = mul(x, 1.0);
    Tensor y = mul(h, h);  // saves h
    h.add_(1.0);
    REQUIRE_THROWS_WITH(y.sum().backward(),
                        Contains("one of the variables needed for gradient computation has been modified by an inplace operation"));
  }
}

// ---------------------------------------------------------------------------------------------
// bf16, Meta, errors
// ---------------------------------------------------------------------------------------------

TEST_CASE("bf16: pointwise ops are within bf16 tolerance of float32", "[pointwise][bf16]") {
  Tensor a = randn_seeded({8, 1, 5}, 71, kFloat), b = randn_seeded({6, 1}, 72, kFloat);
  Tensor p = add(abs(randn_seeded({8, 5}, 73, kFloat)), 0.5);
  check_bf16_matches_f32([](auto& x) { return add(x[0], x[1]); }, {a, b});
  check_bf16_matches_f32([](auto& x) { return sub(x[0], x[1]); }, {a, b});
  check_bf16_matches_f32([](auto& x) { return mul(x[0], x[1]); }, {a, b});
  check_bf16_matches_f32([](auto& x) { return div(x[0], x[1]); }, {a, add(abs(b), 0.5)});
  check_bf16_matches_f32([](auto& x) { return add(x[0], 0.3); }, {a});
  check_bf16_matches_f32([](auto& x) { return mul(x[0], 1.7); }, {a});
  check_bf16_matches_f32([](auto& x) { return div(x[0], 3.0); }, {a});
  check_bf16_matches_f32([](auto& x) { return pow(x[0], 2.0); }, {a});
  check_bf16_matches_f32([](auto& x) { return pow(x[0], 1.5); }, {p});
  std::vector<Fn> unary = {
      [](auto& x) { return neg(x[0]); },     [](auto& x) { return exp(x[0]); },
      [](auto& x) { return sin(x[0]); },     [](auto& x) { return cos(x[0]); },
      [](auto& x) { return tanh(x[0]); },    [](auto& x) { return sigmoid(x[0]); },
      [](auto& x) { return relu(x[0]); },    [](auto& x) { return silu(x[0]); },
      [](auto& x) { return abs(x[0]); },     [](auto& x) { return gelu(x[0]); },
      [](auto& x) { return gelu(x[0], "tanh"); },
  };
  for (auto& f : unary) {
    check_bf16_matches_f32(f, {a});
    check_bf16_matches_f32([&f](auto& x) { return f({x[0].t()}); }, {p});
  }
  check_bf16_matches_f32([](auto& x) { return log(x[0]); }, {p});
  check_bf16_matches_f32([](auto& x) { return sqrt(x[0]); }, {p});
  check_bf16_matches_f32([](auto& x) { return rsqrt(x[0]); }, {p});
  Tensor cond = tensor({1, 0, 0, 1, 1}, {5}, kBool);
  check_bf16_matches_f32([cond](auto& x) { return where(cond, x[0], x[1]); }, {a, randn_seeded({5}, 74, kFloat)});
  check_bf16_matches_f32([cond](auto& x) { return masked_fill(x[0], cond, 0.25); }, {a});
  // backward kernels in bf16
  check_bf16_matches_f32([](auto& x) { return sigmoid_backward(x[0], sigmoid(x[1])); }, {a, a});
  check_bf16_matches_f32([](auto& x) { return tanh_backward(x[0], tanh(x[1])); }, {a, a});
  check_bf16_matches_f32([](auto& x) { return silu_backward(x[0], x[1]); }, {a, a});
  check_bf16_matches_f32([](auto& x) { return gelu_backward(x[0], x[1]); }, {a, a});
  check_bf16_matches_f32([](auto& x) { return threshold_backward(x[0], x[1], 0.0); }, {a, a});
  // storage is 2 bytes per element
  CHECK(a.to(kBFloat16).itemsize() == 2);
  CHECK(sin(a.to(kBFloat16)).nbytes() == a.numel() * 2);
}

TEST_CASE("bf16 gradients flow to bf16 leaves", "[pointwise][bf16][autograd]") {
  Tensor x = randn_seeded({4}, 75, kBFloat16).requires_grad_();
  Tensor w = randn_seeded({4}, 76, kBFloat16).requires_grad_();
  mul(sin(x), w).sum().backward();
  REQUIRE(x.grad().dtype() == kBFloat16);
  std::vector<double> xv = x.to_vector(), wv = w.to_vector(), gx = x.grad().to_vector();
  for (size_t i = 0; i < 4; ++i) CHECK(gx[i] == Approx(std::cos(xv[i]) * wv[i]).margin(1e-2).epsilon(1e-2));
}

TEST_CASE("Meta: pointwise ops infer shape and dtype and allocate nothing", "[pointwise][meta]") {
  Tensor a = meta({2, 1, 3}), b = meta({4, 1}, kDouble), l = meta({4, 1}, kLong), m = meta({4, 3}, kBool);
  int64_t before = memory_allocated(Device{kCPU});
  auto is_meta = [](const Tensor& t, const Shape& s, ScalarType dt) {
    return t.is_meta() && t.sizes() == s && t.dtype() == dt;
  };
  CHECK(is_meta(add(a, b), {2, 4, 3}, kDouble));
  CHECK(is_meta(sub(a, l), {2, 4, 3}, kFloat));
  CHECK(is_meta(mul(l, l), {4, 1}, kLong));
  CHECK(is_meta(div(a, a), {2, 1, 3}, kFloat));
  CHECK(is_meta(add(a, 1.0), {2, 1, 3}, kFloat));
  CHECK(is_meta(mul(a, 2.0), {2, 1, 3}, kFloat));
  CHECK(is_meta(div(b, 2.0), {4, 1}, kDouble));
  CHECK(is_meta(pow(a, 3.0), {2, 1, 3}, kFloat));
  for (auto* f : {+[](const Tensor& x) { return neg(x); }, +[](const Tensor& x) { return exp(x); },
                  +[](const Tensor& x) { return log(x); }, +[](const Tensor& x) { return sin(x); },
                  +[](const Tensor& x) { return cos(x); }, +[](const Tensor& x) { return tanh(x); },
                  +[](const Tensor& x) { return sigmoid(x); }, +[](const Tensor& x) { return relu(x); },
                  +[](const Tensor& x) { return silu(x); }, +[](const Tensor& x) { return sqrt(x); },
                  +[](const Tensor& x) { return rsqrt(x); }, +[](const Tensor& x) { return abs(x); },
                  +[](const Tensor& x) { return gelu(x); }, +[](const Tensor& x) { return gelu(x, "tanh"); }}) {
    CHECK(is_meta(f(a), {2, 1, 3}, kFloat));
    CHECK(is_meta(f(meta({5}, kBFloat16)), {5}, kBFloat16));
  }
  CHECK(is_meta(eq(a, b), {2, 4, 3}, kBool));
  CHECK(is_meta(where(m, a, b), {2, 4, 3}, kDouble));
  CHECK(is_meta(masked_fill(meta({4, 3}), m, 1.0), {4, 3}, kFloat));
  CHECK(is_meta(threshold_backward(a, a, 0.0), {2, 1, 3}, kFloat));
  CHECK(is_meta(sigmoid_backward(a, a), {2, 1, 3}, kFloat));
  CHECK(is_meta(tanh_backward(a, a), {2, 1, 3}, kFloat));
  CHECK(is_meta(silu_backward(a, a), {2, 1, 3}, kFloat));
  CHECK(is_meta(gelu_backward(a, a, "tanh"), {2, 1, 3}, kFloat));
  // in-place on Meta: version bump, same tensor
  Tensor x = meta({4, 3});
  int64_t v0 = x._version();
  x.add_(meta({3})).mul_(meta({4, 1})).relu_().add_(1.0).mul_(2.0);
  CHECK(x._version() == v0 + 5);
  REQUIRE_THROWS_WITH(x.add_(meta({5, 3})), Contains("aten::add_"));
  // autograd on Meta: backward runs and produces Meta gradients
  Tensor w = meta({4, 3}).requires_grad_();
  mul(sin(w), 2.0).sum().backward();
  CHECK(is_meta(w.grad(), {4, 3}, kFloat));
  CHECK(memory_allocated(Device{kCPU}) == before);
}

TEST_CASE("pointwise error paths name the op and the values", "[pointwise][errors]") {
  Tensor a = zeros({2, 3}), b = zeros({4});
  REQUIRE_THROWS_WITH(add(a, b), Contains("aten::add") && Contains("The size of tensor a (3) must match the size of tensor b (4)") &&
                                     Contains("[2, 3]") && Contains("[4]"));
  REQUIRE_THROWS_WITH(sub(a, b), Contains("aten::sub") && Contains("[2, 3]") && Contains("[4]"));
  REQUIRE_THROWS_WITH(mul(a, b), Contains("aten::mul") && Contains("[2, 3]") && Contains("[4]"));
  REQUIRE_THROWS_WITH(div(a, b), Contains("aten::div") && Contains("[2, 3]") && Contains("[4]"));
  REQUIRE_THROWS_WITH(eq(a, b), Contains("aten::eq") && Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(mul(meta({2, 3}), meta({4})), Contains("aten::mul") && Contains("[2, 3]") && Contains("[4]"));
  // devices
  REQUIRE_THROWS_WITH(add(a, meta({2, 3})), Contains("aten::add") && Contains("Expected all tensors to be on the same device") &&
                                               Contains("cpu") && Contains("meta"));
  REQUIRE_THROWS_WITH(mul(meta({2, 3}), a), Contains("Expected all tensors to be on the same device"));
  REQUIRE_THROWS_WITH(where(zeros({2, 3}, kBool), a, meta({2, 3})),
                      Contains("aten::where") && Contains("Expected all tensors to be on the same device"));
  REQUIRE_THROWS_WITH(masked_fill(meta({2, 3}), zeros({3}, kBool), 0.0),
                      Contains("aten::masked_fill") && Contains("Expected all tensors to be on the same device"));
  // dtypes
  REQUIRE_THROWS_WITH(where(zeros({2, 3}), a, a), Contains("aten::where") && Contains("boolean mask") && Contains("Float"));
  REQUIRE_THROWS_WITH(masked_fill(a, zeros({3}, kLong), 1.0), Contains("aten::masked_fill") && Contains("Long"));
  REQUIRE_THROWS_WITH(masked_fill(zeros({3}), zeros({2, 3}, kBool), 1.0),
                      Contains("aten::masked_fill") && Contains("[2, 3]") && Contains("[3]"));
  REQUIRE_THROWS_WITH(where(zeros({3}, kBool), zeros({2}), zeros({3})), Contains("aten::where") && Contains("[2]"));
  REQUIRE_THROWS_WITH(gelu(a, "fast"), Contains("aten::gelu") && Contains("approximate") && Contains("fast"));
  REQUIRE_THROWS_WITH(gelu(meta({2}), "fast"), Contains("aten::gelu") && Contains("fast"));
  REQUIRE_THROWS_WITH(gelu_backward(a, a, "fast"), Contains("fast"));
  REQUIRE_THROWS_WITH(add(zeros({2}, kBool), zeros({2}, kBool)), Contains("aten::add") && Contains("Bool"));
  // undefined arguments
  REQUIRE_THROWS_WITH(add(a, Tensor()), Contains("aten::add"));
}
