// Tests ops/cuda/pointwise.cpp: every elementwise op on CUDA against the CPU kernel, forward and
// backward (the gradients autograd computes on each device), on element counts that are not
// multiples of a block or a vector width, in every memory layout of tests/testing/cuda_op_check.h
// (contiguous: the 16-byte vector path and its tail; offset: misaligned, the element path;
// transposed, strided, expanded: the strided path), empty, broadcast, in every floating dtype;
// in-place forms, dtype errors, and gradcheck in float64 on the device.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/cuda_op_check.h"

using namespace remat;
using namespace remat::testing;

namespace {

constexpr int64_t kRows = 33, kCols = 47;  // 1551 elements: not a multiple of any vector width

// The same values as a [kRows, kCols] tensor in three layouts, built by the same view ops on
// `base` (a CPU or CUDA tensor of kRows * kCols + 1 elements).
std::vector<std::pair<std::string, Tensor>> layouts(const Tensor& base) {
  const int64_t n = kRows * kCols;
  return {{"contiguous", base.slice(0, 0, n).view({kRows, kCols})},
          {"misaligned", base.slice(0, 1, n + 1).view({kRows, kCols})},
          {"transposed", base.slice(0, 0, n).view({kCols, kRows}).t()}};
}

struct Unary {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  double lo, hi;  // input range
};

std::vector<Unary> unary_ops() {
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, -3, 3},
      {"exp", [](const Tensor& x) { return remat::exp(x); }, -3, 3},
      {"log", [](const Tensor& x) { return remat::log(x); }, 0.05, 5},
      {"sin", [](const Tensor& x) { return remat::sin(x); }, -4, 4},
      {"cos", [](const Tensor& x) { return remat::cos(x); }, -4, 4},
      {"tanh", [](const Tensor& x) { return remat::tanh(x); }, -4, 4},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, -6, 6},
      {"relu", [](const Tensor& x) { return relu(x); }, -3, 3},
      {"silu", [](const Tensor& x) { return silu(x); }, -6, 6},
      {"sqrt", [](const Tensor& x) { return remat::sqrt(x); }, 0.01, 9},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, 0.05, 9},
      {"abs", [](const Tensor& x) { return remat::abs(x); }, -3, 3},
      {"gelu", [](const Tensor& x) { return gelu(x); }, -5, 5},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, -5, 5},
      {"pow_2", [](const Tensor& x) { return remat::pow(x, 2.0); }, -3, 3},
      {"pow_1.5", [](const Tensor& x) { return remat::pow(x, 1.5); }, 0.1, 4},
      {"pow_0.5", [](const Tensor& x) { return remat::pow(x, 0.5); }, 0.01, 9},  // PyTorch's sqrt
      {"pow_-0.5", [](const Tensor& x) { return remat::pow(x, -0.5); }, 0.05, 9},
      {"pow_-1", [](const Tensor& x) { return remat::pow(x, -1.0); }, 0.2, 3},
      {"pow_3", [](const Tensor& x) { return remat::pow(x, 3.0); }, -3, 3},
      {"pow_-2", [](const Tensor& x) { return remat::pow(x, -2.0); }, 0.2, 3},
      {"add_scalar", [](const Tensor& x) { return add(x, 0.75); }, -3, 3},
      {"mul_scalar", [](const Tensor& x) { return mul(x, -1.25); }, -3, 3},
      {"div_scalar", [](const Tensor& x) { return div(x, 3.0); }, -3, 3},
  };
}

const ScalarType kFloatingTypes[] = {kFloat, kDouble, kBFloat16, kHalf};

// The fused backward kernels, each as grad(g, saved): the two CUDA-against-CPU cases below.
using GradFn = std::function<Tensor(const Tensor&, const Tensor&)>;
std::vector<std::pair<const char*, GradFn>> fused_backward_ops() {
  return {
      {"threshold_backward", [](const Tensor& g, const Tensor& x) { return threshold_backward(g, x, 0.25); }},
      {"sigmoid_backward", [](const Tensor& g, const Tensor& y) { return sigmoid_backward(g, y); }},
      {"tanh_backward", [](const Tensor& g, const Tensor& y) { return tanh_backward(g, y); }},
      {"silu_backward", [](const Tensor& g, const Tensor& x) { return silu_backward(g, x); }},
      {"gelu_backward", [](const Tensor& g, const Tensor& x) { return gelu_backward(g, x); }},
      {"gelu_backward_tanh", [](const Tensor& g, const Tensor& x) { return gelu_backward(g, x, "tanh"); }},
  };
}

}  // namespace

TEST_CASE("unary and tensor-scalar ops on CUDA match the CPU, forward and backward, on every shape and layout",
          "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const std::vector<Case> cs = cases(floating_types(), element_shapes());
  for (const Unary& op : unary_ops()) {
    check_cases(
        op.name, [&op](const std::vector<Tensor>& in) { return op.fn(in[0]); }, cs,
        [&op](const Case& c) { return std::vector<Arg>{arg(c.shape, op.lo, op.hi).in(c.layout)}; },
        Kind::Elementwise);
  }
}

TEST_CASE("unary ops on CUDA match the CPU on a 33 x 47 tensor in three layouts", "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 100;
  for (const Unary& op : unary_ops()) {
    for (ScalarType dt : kFloatingTypes) {
      Tensor base = random_cpu({kRows * kCols + 1}, dt, ++seed, op.lo, op.hi);
      auto cpu = layouts(base), gpu = layouts(base.to(cuda0()));
      for (size_t l = 0; l < cpu.size(); ++l) {
        Tensor expected = op.fn(cpu[l].second);
        Tensor actual = op.fn(gpu[l].second);
        INFO(op.name << " " << toString(dt) << " " << cpu[l].first);
        CHECK(actual.is_cuda());
        CHECK(compare(actual, expected, elementwise_tolerance(dt)) == "");
      }
    }
  }
}

TEST_CASE("pow on CUDA at signed zeros and -inf takes PyTorch's special cases, as the CPU does", "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // 0.5 and -0.5 are sqrt and rsqrt there: pow(-0, 0.5) = -0 and pow(-inf, 0.5) = NaN, where pow()
  // gives +0 and +inf
  const double inf = std::numeric_limits<double>::infinity();
  for (ScalarType dt : {kFloat, kDouble}) {
    Tensor x = from_vector({-0.0, 0.0, -inf, inf, -4, 4}, {6}, dt);
    for (double e : {0.5, -0.5, -1.0, 3.0, -2.0, 2.5}) {
      const std::vector<double> cpu = remat::pow(x, e).to(kDouble).to_vector();
      const std::vector<double> gpu = remat::pow(x.to(cuda0()), e).to(Device{kCPU}).to(kDouble).to_vector();
      for (size_t i = 0; i < cpu.size(); ++i) {
        INFO(toString(dt) << " pow(" << x.to(kDouble).to_vector()[i] << ", " << e << "): CPU " << cpu[i] << ", CUDA "
                          << gpu[i]);
        CHECK(std::isnan(gpu[i]) == std::isnan(cpu[i]));
        if (!std::isnan(cpu[i])) {
          CHECK(gpu[i] == cpu[i]);
          CHECK(std::signbit(gpu[i]) == std::signbit(cpu[i]));
        }
      }
    }
  }
}

TEST_CASE("neg, abs, relu and scalar ops on Long tensors match the CPU", "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = from_vector({-5, -1, 0, 2, 7, 13}, {2, 3}, kLong);
  Tensor y = x.to(cuda0());
  CHECK(equal(neg(y).to(Device(kCPU)), neg(x)));
  CHECK(equal(remat::abs(y).to(Device(kCPU)), remat::abs(x)));
  CHECK(equal(relu(y).to(Device(kCPU)), relu(x)));
  CHECK(equal(add(y, 2.0).to(Device(kCPU)), add(x, 2.0)));
  CHECK(equal(div(y, 2.0).to(Device(kCPU)), div(x, 2.0)));  // true division: a Float result
  CHECK(div(y, 2.0).dtype() == kFloat);
  CHECK(equal(mul(y, 0.5).to(Device(kCPU)), mul(x, 0.5)));  // a fractional scalar promotes to Float
  Tensor b = from_vector({1, 0, 1}, {3}, kBool);
  Tensor sb = add(b.to(cuda0()), 1.0);  // Bool + scalar promotes to Long
  CHECK(sb.dtype() == kLong);
  CHECK(equal(sb.to(Device(kCPU)), add(b, 1.0)));
}

TEST_CASE("binary ops broadcast on CUDA as on the CPU", "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<const char*, BinaryFn>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
  };
  uint64_t seed = 500;
  for (ScalarType dt : kFloatingTypes) {
    Tensor base = random_cpu({kRows * kCols + 1}, dt, ++seed);
    // Right-hand sides: same shape, a row, a column, a 0-d tensor (away from 0 for div).
    const std::vector<Tensor> rhs = {random_cpu({kRows, kCols}, dt, ++seed, 0.5, 2.0),
                                     random_cpu({kCols}, dt, ++seed, 0.5, 2.0),
                                     random_cpu({kRows, 1}, dt, ++seed, -2.0, -0.5), scalar_tensor(1.5, dt)};
    auto cpu = layouts(base), gpu = layouts(base.to(cuda0()));
    for (const auto& [name, fn] : ops) {
      for (size_t l = 0; l < cpu.size(); ++l) {
        for (const Tensor& r : rhs) {
          INFO(name << " " << toString(dt) << " " << cpu[l].first << " rhs " << str(r.sizes()));
          CHECK(compare(fn(gpu[l].second, r.to(cuda0())), fn(cpu[l].second, r), elementwise_tolerance(dt)) == "");
          CHECK(compare(fn(r.to(cuda0()), gpu[l].second), fn(r, cpu[l].second), elementwise_tolerance(dt)) == "");
        }
      }
    }
  }
  // Mixed dtypes promote (float + double -> double), and Long arithmetic stays integral.
  Tensor f = random_cpu({4, 5}, kFloat, 1), d = random_cpu({5}, kDouble, 2);
  Tensor mixed = add(f.to(cuda0()), d.to(cuda0()));
  CHECK(mixed.dtype() == kDouble);
  CHECK(compare(mixed, add(f, d), kF64) == "");
  Tensor i = from_vector({7, -8, 9}, {3}, kLong), j = from_vector({2, 3, -4}, {3}, kLong);
  CHECK(equal(div(i.to(cuda0()), j.to(cuda0())).to(Device(kCPU)), div(i, j)));
  CHECK(equal(mul(i.to(cuda0()), j.to(cuda0())).to(Device(kCPU)), mul(i, j)));
}

TEST_CASE("binary ops on CUDA match the CPU, forward and backward, with broadcast and strided operands",
          "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<const char*, BinaryFn>> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
  };
  // The other operand: the same shape (in the same layout where it applies), the last dim, a
  // column (2-d shapes), a 0-d tensor; on the right and on the left. Away from 0 (for div).
  auto others = [](const Case& c) {
    std::vector<Arg> v = {arg(c.shape, 0.5, 2.0).in(layout_applies(c.layout, c.shape) ? c.layout : Layout::Contiguous)};
    if (!c.shape.empty()) v.push_back(arg({c.shape.back()}, -2.0, -0.5));
    if (c.shape.size() == 2) v.push_back(arg({c.shape[0], 1}, 0.5, 2.0));
    v.push_back(arg({}, 0.5, 2.0));
    return v;
  };
  const std::vector<Case> cs = cases(floating_types(), element_shapes());
  for (const auto& [name, fn] : ops) {
    uint64_t seed = 0;
    for (const Case& c : cs) {
      for (const Arg& other : others(c)) {
        for (bool left : {false, true}) {
          const Arg self = arg(c.shape).in(c.layout);
          const std::vector<Arg> args = left ? std::vector<Arg>{other, self} : std::vector<Arg>{self, other};
          INFO(name << " on " << describe(c) << (left ? " with on the left " : " with on the right ")
                    << str(other.shape) << " " << layout_name(other.layout));
          const Kind gk = sums_gradients(args, c.shape) ? Kind::Reduction : Kind::Elementwise;
          CHECK(cuda_vs_cpu([&fn = fn](const std::vector<Tensor>& in) { return fn(in[0], in[1]); }, args, c.dtype,
                            options(Kind::Elementwise, c.dtype, gk, true, ++seed)) == "");
        }
      }
    }
  }
}

TEST_CASE("large contiguous tensors take the vector path and still match", "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dt : kFloatingTypes) {
    Tensor a = random_cpu({(1 << 20) + 3}, dt, 7), b = random_cpu({(1 << 20) + 3}, dt, 8);
    CHECK(compare(mul(a.to(cuda0()), b.to(cuda0())), mul(a, b), elementwise_tolerance(dt)) == "");
    CHECK(compare(remat::tanh(a.to(cuda0())), remat::tanh(a), elementwise_tolerance(dt)) == "");
  }
}

TEST_CASE("fused backward kernels on CUDA match the CPU", "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const auto ops = fused_backward_ops();
  uint64_t seed = 900;
  for (ScalarType dt : kFloatingTypes) {
    Tensor g = random_cpu({kRows * kCols + 1}, dt, ++seed), x = random_cpu({kRows * kCols + 1}, dt, ++seed, -3, 3);
    auto gc = layouts(g), xc = layouts(x), gg = layouts(g.to(cuda0())), xg = layouts(x.to(cuda0()));
    for (const auto& [name, fn] : ops) {
      for (size_t l = 0; l < gc.size(); ++l) {
        INFO(name << " " << toString(dt) << " " << gc[l].first);
        CHECK(compare(fn(gg[l].second, xg[l].second), fn(gc[l].second, xc[l].second), elementwise_tolerance(dt)) == "");
      }
    }
  }
}

TEST_CASE("fused backward kernels on CUDA match the CPU on every shape and layout", "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const auto ops = fused_backward_ops();
  const std::vector<Case> cs = cases(floating_types(), element_shapes());
  for (const auto& [name, fn] : ops) {
    // the gradient in the case's layout, the saved tensor contiguous (and the other way round)
    check_cases(
        name, [&fn = fn](const std::vector<Tensor>& in) { return fn(in[0], in[1]); }, cs,
        [](const Case& c) { return std::vector<Arg>{arg(c.shape).in(c.layout), arg(c.shape, -3, 3)}; },
        Kind::Elementwise, /*backward=*/false);
    check_cases(
        name, [&fn = fn](const std::vector<Tensor>& in) { return fn(in[0], in[1]); }, cs,
        [](const Case& c) { return std::vector<Arg>{arg(c.shape), arg(c.shape, -3, 3).in(c.layout)}; },
        Kind::Elementwise, /*backward=*/false);
  }
}

TEST_CASE("where and masked_fill on CUDA match the CPU, forward and backward, with broadcast masks",
          "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const std::vector<Case> cs = cases(floating_types(), element_shapes());
  uint64_t seed = 0;
  for (const Case& c : cs) {
    // A mask over the last dim (broadcast over the others), and one of the full shape.
    for (bool full_mask : {false, true}) {
      const Shape mshape = full_mask || c.shape.empty() ? c.shape : Shape{c.shape.back()};
      Tensor mask = random_mask(mshape, ++seed);
      INFO(describe(c) << " mask " << str(mshape));
      CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); },
                        {fixed(mask), arg(c.shape).in(c.layout), arg(c.shape)}, c.dtype,
                        options(Kind::Elementwise, c.dtype, Kind::Elementwise, true, seed)) == "");
      CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return masked_fill(in[0], in[1], -2.5); },
                        {arg(c.shape).in(c.layout), fixed(mask)}, c.dtype,
                        options(Kind::Elementwise, c.dtype, c.layout == Layout::Expanded ? Kind::Reduction : Kind::Elementwise, true, seed)) == "");
    }
  }
}

TEST_CASE("eq, where and masked_fill on CUDA match the CPU for every dtype", "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf, kLong, kBool}) {
    Tensor a = from_vector({0, 1, 2, 3, 1, 0, 5, 1}, {2, 4}, dt);
    Tensor b = from_vector({0, 1, 1, 1}, {4}, dt);
    Tensor mask = from_vector({1, 0, 0, 1}, {4}, kBool);
    INFO(toString(dt));
    Tensor e = eq(a.to(cuda0()), b.to(cuda0()));
    CHECK(e.dtype() == kBool);
    CHECK(equal(e.to(Device(kCPU)), eq(a, b)));
    CHECK(equal(where(mask.to(cuda0()), a.to(cuda0()), b.to(cuda0())).to(Device(kCPU)), where(mask, a, b)));
    CHECK(equal(masked_fill(a.to(cuda0()), mask.to(cuda0()), 1.0).to(Device(kCPU)), masked_fill(a, mask, 1.0)));
  }
  // A strided condition and operands of different dtypes (promoted).
  Tensor c = from_vector({1, 0, 0, 1, 1, 0}, {3, 2}, kBool).t();
  Tensor x = random_cpu({2, 3}, kFloat, 11), y = random_cpu({3}, kDouble, 12);
  CHECK(compare(where(c.to(cuda0()), x.to(cuda0()), y.to(cuda0())), where(c, x, y), kF64) == "");
}

TEST_CASE("in-place ops on CUDA write into self and bump its version", "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = random_cpu({kRows, kCols}, kFloat, 21), o = random_cpu({kCols}, kFloat, 22);
  Tensor gx = x.to(cuda0());
  Tensor cx = x.clone();
  const int64_t v0 = gx._version();
  gx.add_(o.to(cuda0()));
  cx.add_(o);
  gx.mul_(o.to(cuda0()));
  cx.mul_(o);
  gx.add_(0.5);
  cx.add_(0.5);
  gx.mul_(-2.0);
  cx.mul_(-2.0);
  gx.relu_();
  cx.relu_();
  CHECK(gx._version() == v0 + 5);
  CHECK(compare(gx, cx, kF32Elementwise) == "");
  // In place on a transposed view writes through to the base.
  Tensor base = zeros({4, 6}, TensorOptions().device(cuda0()));
  Tensor view = base.t();
  view.add_(1.0);
  CHECK(base.sum().item() == 24.0);
  Tensor expanded = zeros({1}, TensorOptions().device(cuda0())).expand({4});
  REQUIRE_THROWS_WITH(expanded.relu_(), Catch::Contains("more than one element of the written-to tensor"));
  REQUIRE_THROWS_WITH(expanded.add_(1.0), Catch::Contains("more than one element of the written-to tensor"));
  REQUIRE_THROWS_WITH(from_vector({1, 2}, {2}, kLong).to(cuda0()).add_(0.5),
                      Catch::Contains("can't be cast to the desired output type Long"));
  Tensor small = zeros({3}, TensorOptions().device(cuda0()));
  REQUIRE_THROWS_WITH(small.add_(zeros({2, 3}, TensorOptions().device(cuda0()))),
                      Catch::Contains("doesn't match the broadcast shape"));
}

TEST_CASE("elementwise errors on CUDA are the CPU's", "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor b = from_vector({1, 0}, {2}, kBool);
  Tensor gb = b.to(cuda0());
  REQUIRE_THROWS_WITH(add(gb, gb), Catch::Contains("\"aten::add\" not implemented for 'Bool'"));
  REQUIRE_THROWS_WITH(add(b, b), Catch::Contains("\"aten::add\" not implemented for 'Bool'"));
  REQUIRE_THROWS_WITH(remat::exp(from_vector({1, 2}, {2}, kLong).to(cuda0())),
                      Catch::Contains("aten::exp: expected 'self' to have a floating point dtype"));
  REQUIRE_THROWS_WITH(add(zeros({2}), zeros({2}, TensorOptions().device(cuda0()))),
                      Catch::Contains("Expected all tensors to be on the same device") && Catch::Contains("cuda:0"));
  REQUIRE_THROWS_WITH(gelu(zeros({2}, TensorOptions().device(cuda0())), "fast"),
                      Catch::Contains("approximate argument must be either none or tanh"));
  REQUIRE_THROWS_WITH(mul(zeros({2, 3}, TensorOptions().device(cuda0())), zeros({4}, TensorOptions().device(cuda0()))),
                      Catch::Contains("must match the size of tensor b"));
}

TEST_CASE("gradcheck in float64 on CUDA for the differentiable elementwise ops", "[pointwise][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = (random_cpu({3, 4}, kDouble, 31, 0.3, 2.0)).to(cuda0()).requires_grad_();
  Tensor y = (random_cpu({4}, kDouble, 32, 0.5, 1.5)).to(cuda0()).requires_grad_();
  Tensor mask = from_vector({1, 0, 0, 1}, {4}, kBool).to(cuda0());
  using Fn = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<const char*, Fn>> fns = {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); }},
      {"div", [](const Tensor& a, const Tensor& b) { return div(a, b); }},
      {"exp", [](const Tensor& a, const Tensor&) { return remat::exp(a); }},
      {"log", [](const Tensor& a, const Tensor&) { return remat::log(a); }},
      {"sin", [](const Tensor& a, const Tensor&) { return remat::sin(a); }},
      {"cos", [](const Tensor& a, const Tensor&) { return remat::cos(a); }},
      {"tanh", [](const Tensor& a, const Tensor&) { return remat::tanh(a); }},
      {"sigmoid", [](const Tensor& a, const Tensor&) { return sigmoid(a); }},
      {"relu", [](const Tensor& a, const Tensor&) { return relu(add(a, -1.0)); }},
      {"silu", [](const Tensor& a, const Tensor&) { return silu(a); }},
      {"sqrt", [](const Tensor& a, const Tensor&) { return remat::sqrt(a); }},
      {"rsqrt", [](const Tensor& a, const Tensor&) { return rsqrt(a); }},
      {"abs", [](const Tensor& a, const Tensor&) { return remat::abs(add(a, -1.0)); }},
      {"gelu", [](const Tensor& a, const Tensor&) { return gelu(a); }},
      {"gelu_tanh", [](const Tensor& a, const Tensor&) { return gelu(a, "tanh"); }},
      {"pow", [](const Tensor& a, const Tensor&) { return remat::pow(a, 2.5); }},
      {"scalar ops", [](const Tensor& a, const Tensor&) { return div(mul(add(a, 1.0), 3.0), 2.0); }},
      {"where", [mask](const Tensor& a, const Tensor& b) { return where(mask, a, b); }},
      {"masked_fill", [mask](const Tensor& a, const Tensor&) { return masked_fill(a, mask, 2.0); }},
  };
  for (const auto& [name, fn] : fns) {
    INFO(name);
    CHECK(autograd::gradcheck([&fn = fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in[0], in[1])}; },
                              {x, y}));
  }
}
