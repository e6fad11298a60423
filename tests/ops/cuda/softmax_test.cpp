// Tests ops/cuda/softmax.cpp: softmax and log_softmax on CUDA (forward and the backward kernels)
// against a float64 host reference and against the CPU op (forward and backward through
// autograd), along the last dim (warp- and block-per-row kernels: rows of 1, about 32, about
// 1024 and 4097 elements) and an inner dim (column kernel), on strided, broadcast and empty
// inputs in every floating dtype; gradcheck through the derivative rules; _masked_softmax and
// its backward against the CPU ([L, S] and full masks, rows masked throughout).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <optional>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/cuda_op_check.h"

using namespace remat;
using namespace remat::testing;

namespace {

// Host reference over dim of a contiguous [outer, len, inner] view.
struct Split {
  int64_t outer, len, inner;
};
Split split(const Shape& s, int64_t dim) {
  Split r{1, s[static_cast<size_t>(dim)], 1};
  for (int64_t d = 0; d < dim; ++d) r.outer *= s[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < s.size(); ++d) r.inner *= s[d];
  return r;
}

std::vector<double> softmax_ref(const std::vector<double>& x, Split s, bool log) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t j) { return (o * s.len + j) * s.inner + i; };
      double m = -INFINITY, sum = 0;
      for (int64_t j = 0; j < s.len; ++j) m = std::max(m, x[at(j)]);
      for (int64_t j = 0; j < s.len; ++j) sum += std::exp(x[at(j)] - m);
      for (int64_t j = 0; j < s.len; ++j) y[at(j)] = log ? x[at(j)] - m - std::log(sum) : std::exp(x[at(j)] - m) / sum;
    }
  return y;
}

std::vector<double> softmax_backward_ref(const std::vector<double>& g, const std::vector<double>& y, Split s, bool log) {
  std::vector<double> dx(g.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t j) { return (o * s.len + j) * s.inner + i; };
      double sum = 0;
      for (int64_t j = 0; j < s.len; ++j) sum += log ? g[at(j)] : g[at(j)] * y[at(j)];
      for (int64_t j = 0; j < s.len; ++j)
        dx[at(j)] = log ? g[at(j)] - std::exp(y[at(j)]) * sum : y[at(j)] * (g[at(j)] - sum);
    }
  return dx;
}

}  // namespace

TEST_CASE("softmax and log_softmax on CUDA match a float64 reference", "[softmax][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{64, 100}, 1}, {{8, 3000}, -1}, {{4, 50257}, 1}, {{6, 33, 5}, 1}, {{6, 33, 5}, 0}, {{1}, 0}, {{7, 1}, 1}};
  uint64_t seed = 1;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf}) {
    for (const auto& [shape, dim] : cases) {
      Tensor x = mul(random_cpu(shape, kDouble, ++seed), 3.0).to(dt);
      const int64_t d = dim < 0 ? dim + static_cast<int64_t>(shape.size()) : dim;
      for (bool log : {false, true}) {
        Tensor y = log ? log_softmax(x.to(cuda0()), dim) : softmax(x.to(cuda0()), dim);
        INFO(toString(dt) << " shape " << str(shape) << " dim " << dim << " log " << log);
        CHECK(y.dtype() == dt);
        std::vector<double> expected = softmax_ref(x.to_vector(), split(shape, d), log);
        CHECK(compare(y.to_vector(), expected, reduction_tolerance(dt)) == "");
      }
    }
  }
  // A non-contiguous input and a -inf entry.
  Tensor x = random_cpu({5, 7}, kFloat, 50);
  Tensor y = softmax(x.to(cuda0()).t(), 1);
  CHECK(compare(y.to_vector(), softmax_ref(x.t().contiguous().to_vector(), Split{7, 5, 1}, false), kF32Reduction) ==
        "");
  Tensor inf = from_vector({0.0, -INFINITY, 1.0}, {3}, kFloat).to(cuda0());
  std::vector<double> p = softmax(inf, 0).to_vector();
  CHECK(p[1] == 0.0);
  CHECK(p[0] + p[2] == Approx(1.0));
}

TEST_CASE("the softmax backward kernels on CUDA match a float64 reference", "[softmax][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const std::vector<std::pair<Shape, int64_t>> cases = {{{16, 300}, 1}, {{3, 2500}, 1}, {{4, 9, 6}, 1}};
  uint64_t seed = 100;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    for (const auto& [shape, dim] : cases) {
      for (bool log : {false, true}) {
        Tensor x = random_cpu(shape, kDouble, ++seed), g = random_cpu(shape, kDouble, ++seed);
        Split s = split(shape, dim);
        std::vector<double> yv = softmax_ref(x.to_vector(), s, log);
        Tensor y = from_vector(yv, shape, dt), gd = g.to(dt);
        Tensor dx = log ? _log_softmax_backward_data(gd.to(cuda0()), y.to(cuda0()), dim)
                        : _softmax_backward_data(gd.to(cuda0()), y.to(cuda0()), dim);
        INFO(toString(dt) << " shape " << str(shape) << " log " << log);
        // the reference from the same (rounded) inputs the kernel saw
        CHECK(compare(dx.to_vector(), softmax_backward_ref(gd.to_vector(), y.to_vector(), s, log),
                      reduction_tolerance(dt)) == "");
      }
    }
  }
  auto opt = TensorOptions().device(cuda0());
  REQUIRE_THROWS_WITH(_softmax_backward_data(zeros({2, 3}, opt), zeros({3, 2}, opt), 1),
                      Catch::Contains("does not match output of shape"));
  REQUIRE_THROWS_WITH(softmax(zeros({2, 3}, opt), 2), Catch::Contains("Dimension out of range"));
  REQUIRE_THROWS_WITH(softmax(zeros({2}, TensorOptions().dtype(kLong).device(cuda0())), 0),
                      Catch::Contains("floating point"));
}

TEST_CASE("gradcheck in float64 on CUDA for softmax and log_softmax", "[softmax][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = random_cpu({3, 5}, kDouble, 7).to(cuda0()).requires_grad_();
  CHECK(autograd::gradcheck([](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], 1)}; },
                            {x}));
  CHECK(autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{log_softmax(in[0], 0)}; }, {x}));
}

TEST_CASE("softmax and log_softmax on CUDA match the CPU, forward and backward, on every row length and layout",
          "[softmax][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  auto one = [](const Case& c) { return std::vector<Arg>{arg(c.shape, -4, 4).in(c.layout)}; };
  // Over the last dim (the row kernels) and over dim 0 (the column kernel: an inner dim).
  const std::vector<Case> cs = cases(floating_types(), row_shapes());
  for (int64_t dim : {int64_t{-1}, int64_t{0}}) {
    const std::string d = " dim " + std::to_string(dim);
    check_cases(("softmax" + d).c_str(), [dim](const std::vector<Tensor>& in) { return softmax(in[0], dim); }, cs, one,
                Kind::Reduction);
    check_cases(("log_softmax" + d).c_str(), [dim](const std::vector<Tensor>& in) { return log_softmax(in[0], dim); },
                cs, one, Kind::Reduction);
  }
  // The middle dim of 3-d inputs: inner dims of 5 and 3, a dim of 1025.
  const std::vector<Case> cs3 = cases(floating_types(), {{6, 33, 5}, {2, 1025, 3}, {2, 0, 3}});
  check_cases(
      "softmax dim 1", [](const std::vector<Tensor>& in) { return softmax(in[0], 1); }, cs3, one, Kind::Reduction);
  check_cases(
      "log_softmax dim 1", [](const std::vector<Tensor>& in) { return log_softmax(in[0], 1); }, cs3, one,
      Kind::Reduction);
  // More rows than the grid's blocks hold at once (a grid-stride loop over rows). Every thread
  // of these launches is emulated, so one dtype and layout.
  const std::vector<Case> many = cases({kFloat}, {{17000, 3}}, {Layout::Contiguous});
  check_cases(
      "softmax, many rows", [](const std::vector<Tensor>& in) { return softmax(in[0], 1); }, many, one, Kind::Reduction);
  check_cases(
      "log_softmax, many rows", [](const std::vector<Tensor>& in) { return log_softmax(in[0], 1); }, many, one,
      Kind::Reduction);
}

TEST_CASE("the softmax backward kernels on CUDA match the CPU kernels on every row length", "[softmax][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // Called directly, with a gradient in the case's layout and an output that is a softmax.
  std::vector<Shape> shapes = row_shapes();
  shapes.push_back({6, 33, 5});
  for (const Case& c : cases(floating_types(), shapes)) {
    for (bool log : {false, true}) {
      INFO(describe(c) << " log " << log);
      CHECK(cuda_vs_cpu(
                [log](const std::vector<Tensor>& in) {
                  const int64_t dim = in[0].dim() - 1;
                  Tensor y = log ? log_softmax(in[1], dim) : softmax(in[1], dim);
                  return log ? _log_softmax_backward_data(in[0], y, dim) : _softmax_backward_data(in[0], y, dim);
                },
                {arg(c.shape).in(c.layout), arg(c.shape, -3, 3)}, c.dtype,
                options(Kind::Reduction, c.dtype, Kind::Reduction, false)) == "");
    }
  }
}

namespace {

// A Bool mask, true (masked out) where a uniform draw is below 0.4; row 0 masked throughout.
Tensor random_mask_cpu(const Shape& shape, uint64_t seed) {
  Tensor u = random_cpu(shape, kDouble, seed, 0.0, 1.0);
  Tensor m = eq(relu(add(u, -0.4)), zeros_like(u));
  const int64_t len = shape.back();
  Tensor flat = reshape(m, {-1, len});
  Tensor row0 = ones({1, len}, TensorOptions().dtype(kBool));
  return reshape(cat({row0, slice(flat, 0, 1, flat.size(0))}, 0), shape);
}

double max_diff(const Tensor& a, const Tensor& b) {
  Tensor d = abs(sub(a.to(Device{kCPU}).to(kDouble), b.to(Device{kCPU}).to(kDouble)));
  return d.numel() == 0 ? 0.0 : amax(reshape(d, {-1}), 0).item();
}

}  // namespace

TEST_CASE("_masked_softmax on CUDA matches the CPU, forward and backward, [L, S] and full masks", "[softmax][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // warp per row (up to 1024) and block per row (1025)
  for (int64_t len : {1, 7, 33, 1025}) {
    for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
      INFO(toString(dt) << ", rows of " << len);
      const Shape shape{2, 3, 4, len};
      Tensor x = random_cpu(shape, dt, 101), g = random_cpu(shape, dt, 102);
      Tensor ls = random_mask_cpu({4, len}, 103), full_mask = random_mask_cpu(shape, 104);
      const double tol = dt == kBFloat16 ? 1e-2 : dt == kFloat ? 1e-6 : 1e-12;
      for (bool two_d : {true, false}) {
        const Tensor& m = two_d ? ls : full_mask;
        const std::optional<int64_t> type = two_d ? std::optional<int64_t>(0) : std::nullopt;
        Tensor y = _masked_softmax(x, m, -1, type);
        Tensor yc = _masked_softmax(x.to(cuda0()), m.to(cuda0()), -1, type);
        CHECK(yc.is_cuda());
        CHECK(max_diff(yc, y) <= tol);
        // the row masked throughout is zeros
        CHECK(max_diff(select(reshape(yc, {-1, len}), 0, 0), zeros({len})) == 0.0);
        Tensor dx = _masked_softmax_backward(g, y, m, -1);
        Tensor dxc = _masked_softmax_backward(g.to(cuda0()), y.to(cuda0()), m.to(cuda0()), -1);
        CHECK(max_diff(dxc, dx) <= tol);
      }
    }
  }
  // a transposed input and mask are read through contiguous copies
  Tensor xt = transpose(random_cpu({5, 6}, kFloat, 105), 0, 1), mt = transpose(random_mask_cpu({5, 6}, 106), 0, 1);
  CHECK(max_diff(_masked_softmax(xt.to(cuda0()), mt.to(cuda0())), _masked_softmax(xt, mt)) <= 1e-6);
}

TEST_CASE("gradcheck in float64 on CUDA for _masked_softmax", "[softmax][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = random_cpu({1, 2, 3, 5}, kDouble, 111).to(cuda0()).requires_grad_();
  Tensor causal = triu(ones({3, 5}, TensorOptions().dtype(kBool).device(cuda0())), 1);
  CHECK(autograd::gradcheck(
      [causal](const std::vector<Tensor>& in) { return std::vector<Tensor>{_masked_softmax(in[0], causal, -1, 0)}; },
      {x}));
}
