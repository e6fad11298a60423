// Tests ops/softmax.cpp: softmax, log_softmax, _softmax_backward_data, _log_softmax_backward_data.
#include <catch2/catch.hpp>
#include <cmath>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::check_values;
using remat::testing::grad_input;
using remat::testing::max_abs_diff;
using remat::testing::seeded_randn;

TEST_CASE("softmax and log_softmax match hand-computed values", "[softmax]") {
  Tensor x = from_vector({1, 2, 3}, {3}, kDouble);
  // exp(k) / (e + e^2 + e^3)
  check_values(softmax(x, 0), {0.09003057317038046, 0.24472847105479764, 0.6652409557748219});
  // k - log(e + e^2 + e^3)
  check_values(log_softmax(x, -1), {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806});

  // Over dim 0 of a [2, 3] (a non-last dim: inner = 3): each column is normalised.
  Tensor y = from_vector({1, 2, 3, 1, 4, 0}, {2, 3}, kDouble);
  std::vector<double> s = softmax(y, 0).to_vector();
  CHECK(s[0] == Approx(0.5));
  CHECK(s[3] == Approx(0.5));
  CHECK(s[1] == Approx(0.11920292202211755));  // e^2 / (e^2 + e^4)
  CHECK(s[4] == Approx(0.8807970779778823));
  CHECK(s[2] == Approx(0.9525741268224334));  // e^3 / (e^3 + 1)
  CHECK(s[5] == Approx(0.04742587317756678));
  std::vector<double> ls = log_softmax(y, 0).to_vector();
  CHECK(ls[1] == Approx(std::log(0.11920292202211755)));
  CHECK(ls[5] == Approx(std::log(0.04742587317756678)));
}

TEST_CASE("softmax is numerically stable for large logits", "[softmax]") {
  for (ScalarType dt : {kFloat, kDouble}) {
    Tensor x = from_vector({1000, 1001, -1000}, {3}, dt);
    std::vector<double> s = softmax(x, 0).to_vector();
    CHECK(s[0] == Approx(0.2689414213699951).epsilon(1e-6));
    CHECK(s[1] == Approx(0.7310585786300049).epsilon(1e-6));
    CHECK(s[2] == 0.0);
    std::vector<double> ls = log_softmax(from_vector({1000, 1000}, {2}, dt), 0).to_vector();
    CHECK(ls[0] == Approx(-std::log(2.0)).epsilon(1e-6));
    CHECK(ls[1] == Approx(-std::log(2.0)).epsilon(1e-6));
  }
}

TEST_CASE("softmax over every dim of a strided input matches the contiguous input", "[softmax]") {
  Tensor base = seeded_randn({4, 3, 5}, 1);
  Tensor strided = transpose(base, 0, 2);  // [5, 3, 4], non-contiguous
  REQUIRE_FALSE(strided.is_contiguous());
  Tensor dense = strided.contiguous();
  for (int64_t dim : {0, 1, 2, -1}) {
    CHECK(max_abs_diff(softmax(strided, dim), softmax(dense, dim)) == 0.0);
    CHECK(max_abs_diff(log_softmax(strided, dim), log_softmax(dense, dim)) == 0.0);
    // Rows sum to one.
    Tensor row_sums = sum(softmax(strided, dim), {dim});
    CHECK(max_abs_diff(row_sums, ones_like(row_sums)) < 1e-12);
  }
  Tensor sliced = slice(base, 2, 0, 5, 2);  // [4, 3, 3], step 2
  CHECK(max_abs_diff(softmax(sliced, 1), softmax(sliced.contiguous(), 1)) == 0.0);
}

TEST_CASE("softmax of a 0-d tensor is one", "[softmax]") {
  Tensor x = scalar_tensor(3.5, kDouble);
  CHECK(softmax(x, 0).item() == 1.0);
  CHECK(log_softmax(x, -1).item() == 0.0);
}

TEST_CASE("softmax gradcheck over several dims and layouts", "[softmax][gradcheck]") {
  for (int64_t dim : {0, 1, 2, -1}) {
    for (bool log : {false, true}) {
      Tensor x = grad_input({3, 4, 2}, 10 + static_cast<uint64_t>(dim + 1));
      // transposed: the kernel sees a non-contiguous [2, 4, 3]
      auto fn = [dim, log](const std::vector<Tensor>& in) {
        Tensor t = transpose(in[0], 0, 2);
        return std::vector<Tensor>{log ? log_softmax(t, dim) : softmax(t, dim)};
      };
      CHECK(autograd::gradcheck(fn, {x}));
      // sliced with a step
      auto sliced = [dim, log](const std::vector<Tensor>& in) {
        Tensor t = slice(in[0], 1, 0, 4, 2);
        return std::vector<Tensor>{log ? log_softmax(t, dim) : softmax(t, dim)};
      };
      CHECK(autograd::gradcheck(sliced, {x}));
    }
  }
}

TEST_CASE("softmax and log_softmax second-order gradcheck", "[softmax][gradgradcheck]") {
  Tensor x = grad_input({3, 4}, 21);
  for (int64_t dim : {0, 1}) {
    CHECK(autograd::gradgradcheck(
        [dim](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], dim)}; }, {x}));
    CHECK(autograd::gradgradcheck(
        [dim](const std::vector<Tensor>& in) { return std::vector<Tensor>{log_softmax(transpose(in[0], 0, 1), dim)}; },
        {x}));
  }
}

TEST_CASE("the _backward_data ops have correct derivatives in both arguments", "[softmax][gradcheck]") {
  Tensor g = grad_input({2, 5}, 31);
  Tensor y = grad_input({2, 5}, 32);
  for (int64_t dim : {0, 1}) {
    CHECK(autograd::gradcheck(
        [dim](const std::vector<Tensor>& in) { return std::vector<Tensor>{_softmax_backward_data(in[0], in[1], dim)}; },
        {g, y}));
    CHECK(autograd::gradcheck(
        [dim](const std::vector<Tensor>& in) {
          return std::vector<Tensor>{_log_softmax_backward_data(in[0], in[1], dim)};
        },
        {g, y}));
  }
}

TEST_CASE("_softmax_backward_data matches the formula", "[softmax]") {
  Tensor y = softmax(from_vector({0.5, -1, 2}, {3}, kDouble), 0);
  Tensor g = from_vector({1, 2, 3}, {3}, kDouble);
  std::vector<double> yv = y.to_vector();
  double dot = yv[0] * 1 + yv[1] * 2 + yv[2] * 3;
  std::vector<double> dx = _softmax_backward_data(g, y, 0).to_vector();
  for (int i = 0; i < 3; ++i) CHECK(dx[i] == Approx(yv[i] * ((i + 1) - dot)));
  Tensor ly = log_softmax(from_vector({0.5, -1, 2}, {3}, kDouble), 0);
  std::vector<double> ldx = _log_softmax_backward_data(g, ly, 0).to_vector();
  for (int i = 0; i < 3; ++i) CHECK(ldx[i] == Approx((i + 1) - yv[i] * 6.0));
}

TEST_CASE("softmax in reduced precision is within tolerance of float32", "[softmax][bf16]") {
  Tensor x = seeded_randn({8, 33}, 41, kFloat);
  Tensor ref = softmax(x, 1), lref = log_softmax(x, 1);
  for (ScalarType dt : {kBFloat16, kHalf}) {
    Tensor xl = x.to(dt);
    Tensor s = softmax(xl, 1), ls = log_softmax(xl, 1);
    CHECK(s.dtype() == dt);
    // Inputs rounded to 8 (bf16) / 11 (half) bits, then one rounding of the output.
    double tol = dt == kBFloat16 ? 2e-2 : 2e-3;
    CHECK(remat::testing::all_close(s.to(kFloat), ref, tol, 1e-3));
    CHECK(remat::testing::all_close(ls.to(kFloat), lref, tol, tol));
    Tensor g = seeded_randn({8, 33}, 42, kFloat);
    CHECK(remat::testing::all_close(_softmax_backward_data(g.to(dt), s, 1).to(kFloat),
                                    _softmax_backward_data(g, ref, 1), tol, 1e-2));
  }
}

TEST_CASE("softmax autograd through the op and backward use the fused kernels", "[softmax]") {
  Tensor x = seeded_randn({3, 4}, 51).requires_grad_(true);
  auto counter = std::make_shared<remat::testing::OpCounter>();
  {
    DispatchModeGuard guard(counter);
    Tensor y = softmax(x, 1);
    sum(mul(y, y)).backward();
  }
  CHECK(counter->count("aten::softmax") == 1);
  CHECK(counter->count("aten::_softmax_backward_data") == 1);
  REQUIRE(x.grad().defined());
}

TEST_CASE("softmax ops on Meta infer shapes and allocate nothing", "[softmax][meta]") {
  int64_t before = memory_allocated();
  Tensor x = remat::testing::meta_empty({2, 7, 3}, kBFloat16);
  Tensor s = softmax(x, 1), ls = log_softmax(x, -1);
  Tensor gs = _softmax_backward_data(s, s, 1), gls = _log_softmax_backward_data(ls, ls, 2);
  for (const Tensor& t : {s, ls, gs, gls}) {
    CHECK(t.is_meta());
    CHECK(t.sizes() == Shape{2, 7, 3});
    CHECK(t.dtype() == kBFloat16);
  }
  CHECK(memory_allocated() == before);
  CHECK_THROWS_WITH(softmax(x, 3), Contains("aten::softmax: Dimension out of range"));
}

TEST_CASE("softmax errors name the op and the values", "[softmax][errors]") {
  Tensor x = ones({2, 3});
  REQUIRE_THROWS_WITH(
      softmax(x, 2), Contains("aten::softmax: Dimension out of range (expected to be in range of [-2, 1], but got 2)"));
  REQUIRE_THROWS_WITH(log_softmax(x, -3), Contains("aten::log_softmax: Dimension out of range"));
  REQUIRE_THROWS_WITH(softmax(ones({2}, kLong), 0),
                      Contains("aten::softmax: expected 'self' to have a floating point dtype, but got Long"));
  REQUIRE_THROWS_WITH(
      _softmax_backward_data(ones({2, 3}), ones({3, 2}), 1),
      Contains("aten::_softmax_backward_data: grad_output of shape [2, 3] does not match output of shape [3, 2]"));
  REQUIRE_THROWS_WITH(_log_softmax_backward_data(ones({2, 3}), ones({2, 3}, kDouble), 1),
                      Contains("aten::_log_softmax_backward_data: expected both arguments to have the same dtype, but "
                               "got Float and Double"));
  REQUIRE_THROWS_WITH(_softmax_backward_data(ones({2}, kLong), ones({2}, kLong), 0),
                      Contains("aten::_softmax_backward_data: expected 'grad_output' to have a floating point dtype"));
  REQUIRE_THROWS_WITH(_log_softmax_backward_data(ones({2, 3}), ones({2, 3}), 2),
                      Contains("aten::_log_softmax_backward_data: Dimension out of range"));
  REQUIRE_THROWS_WITH(_softmax_backward_data(Tensor(), ones({2, 3}), 1),
                      Contains("aten::_softmax_backward_data: argument 'grad_output' is an undefined tensor"));
  REQUIRE_THROWS_WITH(_softmax_backward_data(ones({2, 3}), remat::testing::meta_empty({2, 3}), 1),
                      Contains("aten::_softmax_backward_data: Expected all tensors to be on the same device"));
}
