// Tests the CUDA kernels of addcmul_, addcdiv_, lerp_, maximum and minimum (ops/pointwise.def rows) on CUDA
// against the CPU kernels, forward and backward, on element counts that are not multiples of a
// block or a vector width, strided and broadcast operands, empty tensors, every floating dtype
// (every dtype for maximum/minimum); NaN propagation and errors.
#include <catch2/catch.hpp>

#include <functional>
#include <limits>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/cuda_op_check.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("addcmul_, addcdiv_ and lerp_ on CUDA match the CPU", "[pointwise_ops][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 1;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf}) {
    Tensor self = random_cpu({17, 33}, dt, ++seed), t1 = random_cpu({33}, dt, ++seed);
    Tensor t2 = random_cpu({17, 1}, dt, ++seed, 0.5, 2.0), end = random_cpu({17, 33}, dt, ++seed);
    INFO(toString(dt));
    // Each update starts from the same self, so differences cannot compound.
    Tensor c = self.clone(), g = self.to(cuda0());
    const int64_t v = g._version();
    addcmul_(c, t1, t2, 0.3);
    addcmul_(g, t1.to(cuda0()), t2.to(cuda0()), 0.3);
    CHECK(g._version() == v + 1);
    CHECK(compare(g, c, elementwise_tolerance(dt)) == "");
    c = self.clone();
    g = self.to(cuda0());
    addcdiv_(c, t1, t2, -1.7);
    addcdiv_(g, t1.to(cuda0()), t2.to(cuda0()), -1.7);
    CHECK(compare(g, c, elementwise_tolerance(dt)) == "");
    for (double w : {0.1, 0.5, 0.9, 1.0}) {
      c = self.clone();
      g = self.to(cuda0());
      lerp_(c, end, w);
      lerp_(g, end.to(cuda0()), w);
      INFO("weight " << w);
      CHECK(compare(g, c, elementwise_tolerance(dt)) == "");
    }
  }
  Tensor s = zeros({4}, TensorOptions().device(cuda0()));
  REQUIRE_THROWS_WITH(addcmul_(s, zeros({2, 4}, TensorOptions().device(cuda0())), s),
                      Catch::Contains("doesn't match the broadcast shape"));
}

TEST_CASE("maximum and minimum on CUDA match the CPU and propagate NaN", "[pointwise_ops][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf, kLong, kBool}) {
    Tensor a = from_vector({0, 1, 5, -3, 2, 1}, {2, 3}, dt), b = from_vector({1, 1, -4}, {3}, dt);
    INFO(toString(dt));
    CHECK(equal(maximum(a.to(cuda0()), b.to(cuda0())).to(Device(kCPU)), maximum(a, b)));
    CHECK(equal(minimum(a.to(cuda0()), b.to(cuda0())).to(Device(kCPU)), minimum(a, b)));
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = from_vector({nan, 1.0, 2.0}, {3}, kFloat), b = from_vector({0.0, nan, 3.0}, {3}, kFloat);
  std::vector<double> m = maximum(a.to(cuda0()), b.to(cuda0())).to_vector();
  CHECK(std::isnan(m[0]));
  CHECK(std::isnan(m[1]));
  CHECK(m[2] == 3.0);
  Tensor mixed = maximum(a.to(cuda0()), from_vector({1, 2, 3}, {3}, kDouble).to(cuda0()));
  CHECK(mixed.dtype() == kDouble);
}

namespace {
// The other operands of an update or a binary op: the same shape (in the case's layout where it
// applies), the last dim (broadcast), a 0-d tensor.
std::vector<Arg> other_operands(const Case& c, double lo, double hi) {
  std::vector<Arg> v = {arg(c.shape, lo, hi).in(c.layout)};
  if (!c.shape.empty()) v.push_back(arg({c.shape.back()}, lo, hi));
  v.push_back(arg({}, lo, hi));
  return v;
}
// The in-place updates write into self, which cannot be an expanded view.
std::vector<Case> writable(std::vector<Case> cs) {
  std::vector<Case> out;
  for (const Case& c : cs)
    if (c.layout != Layout::Expanded) out.push_back(c);
  return out;
}
}  // namespace

TEST_CASE("addcmul_, addcdiv_ and lerp_ on CUDA match the CPU on every shape and layout, forward and backward",
          "[pointwise_ops][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // Each update runs on a clone of self (a differentiable in-place op on a non-leaf).
  const std::vector<Case> cs = writable(cases(floating_types(), element_shapes()));
  uint64_t seed = 0;
  for (const Case& c : cs) {
    // tensor1 and tensor2 of the same kind (full, a row, 0-d), and a full one with a 0-d one
    const std::vector<Arg> t1s = other_operands(c, -2.0, 2.0), t2s = other_operands(c, 0.5, 2.0);
    std::vector<std::pair<Arg, Arg>> pairs;
    for (size_t i = 0; i < t1s.size(); ++i) pairs.emplace_back(t1s[i], t2s[i]);
    pairs.emplace_back(t1s.front(), t2s.back());
    for (const auto& [t1, t2] : pairs) {
      const std::vector<Arg> args = {arg(c.shape).in(c.layout), t1, t2};
      const Kind gk = sums_gradients(args, c.shape) ? Kind::Reduction : Kind::Elementwise;
      INFO(describe(c) << " tensor1 " << str(t1.shape) << " tensor2 " << str(t2.shape));
      CHECK(cuda_vs_cpu(
                [](const std::vector<Tensor>& in) {
                  Tensor s = in[0].clone();
                  return addcmul_(s, in[1], in[2], 0.3);
                },
                args, c.dtype, options(Kind::Elementwise, c.dtype, gk, true, ++seed)) == "");
      CHECK(cuda_vs_cpu(
                [](const std::vector<Tensor>& in) {
                  Tensor s = in[0].clone();
                  return addcdiv_(s, in[1], in[2], -1.7);
                },
                args, c.dtype, options(Kind::Elementwise, c.dtype, gk, true, ++seed)) == "");
    }
    for (const Arg& end : other_operands(c, -2.0, 2.0)) {
      for (double w : {0.25, 0.75}) {
        const std::vector<Arg> args = {arg(c.shape).in(c.layout), end};
        const Kind gk = sums_gradients(args, c.shape) ? Kind::Reduction : Kind::Elementwise;
        INFO(describe(c) << " end " << str(end.shape) << " weight " << w);
        CHECK(cuda_vs_cpu(
                  [w](const std::vector<Tensor>& in) {
                    Tensor s = in[0].clone();
                    return lerp_(s, in[1], w);
                  },
                  args, c.dtype, options(Kind::Elementwise, c.dtype, gk, true, ++seed)) == "");
      }
    }
  }
}

TEST_CASE("maximum and minimum on CUDA match the CPU on every shape and layout, forward and backward",
          "[pointwise_ops][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  using Fn = std::function<Tensor(const Tensor&, const Tensor&)>;
  const std::vector<std::pair<const char*, Fn>> ops = {
      {"maximum", [](const Tensor& a, const Tensor& b) { return maximum(a, b); }},
      {"minimum", [](const Tensor& a, const Tensor& b) { return minimum(a, b); }},
  };
  const std::vector<Case> cs = cases(floating_types(), element_shapes());
  for (const auto& [name, fn] : ops) {
    uint64_t seed = 0;
    for (const Case& c : cs) {
      for (const Arg& other : other_operands(c, 0, 0)) {
        for (bool left : {false, true}) {
          const Arg self = arg(c.shape).in(c.layout);
          const std::vector<Arg> args = left ? std::vector<Arg>{other, self} : std::vector<Arg>{self, other};
          const Kind gk = sums_gradients(args, c.shape) ? Kind::Reduction : Kind::Elementwise;
          INFO(name << " on " << describe(c) << " other " << str(other.shape) << (left ? " on the left" : ""));
          CHECK(cuda_vs_cpu([&fn = fn](const std::vector<Tensor>& in) { return fn(in[0], in[1]); }, args, c.dtype,
                            options(Kind::Elementwise, c.dtype, gk, true, ++seed)) == "");
        }
      }
    }
  }
  // Long operands in every layout, Bool ones: exact, no gradient.
  for (const Case& c : cases({kLong}, element_shapes())) {
    const std::vector<Arg> args = {arg(c.shape, -5, 5).in(c.layout), arg(c.shape, -5, 5)};
    INFO(describe(c));
    for (const auto& [name, fn] : ops) {
      INFO(name);
      CHECK(cuda_vs_cpu([&fn = fn](const std::vector<Tensor>& in) { return fn(in[0], in[1]); }, args, kLong,
                        options(Kind::Elementwise, kLong, Kind::Elementwise, false)) == "");
    }
    Tensor ma = random_mask(c.shape, 7), mb = random_mask(c.shape, 8);
    CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return maximum(in[0], in[1]); }, {fixed(ma), fixed(mb)}, kBool,
                      options(Kind::Elementwise, kBool, Kind::Elementwise, false)) == "");
    CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return minimum(in[0], in[1]); }, {fixed(ma), fixed(mb)}, kBool,
                      options(Kind::Elementwise, kBool, Kind::Elementwise, false)) == "");
  }
}
