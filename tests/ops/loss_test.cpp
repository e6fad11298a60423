// Tests ops/loss.cpp: cross_entropy (one fused forward kernel) and cross_entropy_backward (one fused
// backward kernel).
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::all_close;
using remat::testing::check_values;
using remat::testing::grad_input;
using remat::testing::meta_empty;
using remat::testing::seeded_randn;
using TL = std::vector<Tensor>;

namespace {
Tensor longs(const std::vector<double>& v) { return from_vector(v, {static_cast<int64_t>(v.size())}, kLong); }
}  // namespace

TEST_CASE("cross_entropy matches hand-computed values", "[cross_entropy]") {
  Tensor x = from_vector({1, 2, 3, 1, 1, 1}, {2, 3}, kDouble);
  // row 0: log(e + e^2 + e^3) - 3;  row 1: log(3) - 1 + 1
  Tensor loss = cross_entropy(x, longs({2, 0}));
  CHECK(loss.dim() == 0);
  CHECK(loss.item() == Approx((0.4076059644443806 + 1.0986122886681098) / 2).epsilon(1e-14));
  // The same value from log_softmax: -mean(log_softmax(x)[i, t_i])
  std::vector<double> ls = log_softmax(x, 1).to_vector();
  CHECK(loss.item() == Approx(-(ls[2] + ls[3]) / 2).epsilon(1e-14));
  // The backward: (softmax - onehot) / N
  Tensor g = cross_entropy_backward(scalar_tensor(1.0, kDouble), x, longs({2, 0}));
  check_values(g, {0.09003057317038046 / 2, 0.24472847105479764 / 2, (0.6652409557748219 - 1) / 2, (1.0 / 3 - 1) / 2,
                   1.0 / 6, 1.0 / 6});
  // grad_output scales it
  check_values(cross_entropy_backward(scalar_tensor(-3.0, kDouble), x, longs({2, 0})),
               {-3 * 0.09003057317038046 / 2, -3 * 0.24472847105479764 / 2, -3 * (0.6652409557748219 - 1) / 2,
                -3 * (1.0 / 3 - 1) / 2, -0.5, -0.5});
}

TEST_CASE("cross_entropy is stable for large logits", "[cross_entropy]") {
  for (ScalarType dt : {kFloat, kDouble}) {
    Tensor x = from_vector({1000, 0, -1000, 1000}, {2, 2}, dt);
    CHECK(cross_entropy(x, longs({0, 1})).item() == 0.0);
    // row 0 loses 1000 - 0, row 1 loses 1000 - (-1000)
    CHECK(cross_entropy(x, longs({1, 0})).item() == Approx((1000.0 + 2000.0) / 2));
    std::vector<double> g = cross_entropy_backward(scalar_tensor(1.0, dt), x, longs({1, 0})).to_vector();
    CHECK(g == std::vector<double>{0.5, -0.5, -0.5, 0.5});
  }
}

TEST_CASE("cross_entropy and its backward on rows with -inf, inf and NaN give PyTorch's values", "[cross_entropy]") {
  // One row at a time (N = 1: the mean is the row's loss), 40 classes: two vectors of 16 and a
  // tail in the AVX-512 kernels. loss = logsumexp(x) - x[t]; grad = softmax(x) - onehot(t).
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const int64_t n = 40;
  struct Row {
    const char* what;
    std::vector<double> x;
    int64_t target;
  };
  std::vector<Row> rows;
  auto make = [&](const char* what, int64_t target, auto value) {
    Row r{what, std::vector<double>(n), target};
    for (int64_t j = 0; j < n; ++j) r.x[j] = value(j);
    rows.push_back(r);
  };
  make("masked classes (-inf), the target not", 5, [&](int64_t j) { return j % 3 == 1 ? -inf : 0.2 * double(j); });
  make("the target's logit -inf: loss inf", 4, [&](int64_t j) { return j == 4 ? -inf : 0.2 * double(j); });
  make("every logit -inf: NaN", 7, [&](int64_t) { return -inf; });
  make("a NaN (in the tail): NaN", 7, [&](int64_t j) { return j == 35 ? nan : 0.1 * double(j); });
  make("+inf at the target: NaN (inf - inf)", 9, [&](int64_t j) { return j == 9 ? inf : 0.1 * double(j); });
  make("+inf elsewhere: loss inf", 9, [&](int64_t j) { return j == 20 ? inf : 0.1 * double(j); });
  make("large logits", 33, [&](int64_t j) { return 1e4 + double(j % 7); });
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    const double tol = dt == kBFloat16 ? 2e-2 : dt == kFloat ? 1e-5 : 1e-12;
    for (const Row& r : rows) {
      Tensor x = from_vector(r.x, {1, n}, dt);
      std::vector<double> xr = x.to(kDouble).to_vector();
      Tensor t = longs({double(r.target)});
      const double loss = cross_entropy(x, t).to(kDouble).item();
      std::vector<double> grad = cross_entropy_backward(scalar_tensor(1.0, dt), x, t).to(kDouble).to_vector();
      double mx = -inf;
      bool any_nan = false;
      for (double v : xr) any_nan |= std::isnan(v), mx = std::max(mx, v);
      double sum = 0;
      for (double v : xr) sum += std::exp(v - mx);
      const double lse = mx + std::log(sum);
      const double want = any_nan ? nan : lse - xr[static_cast<size_t>(r.target)];
      INFO(r.what << ", " << toString(dt) << ": loss " << loss << ", want " << want);
      if (std::isnan(want) || std::isinf(want)) {
        CHECK((std::isnan(loss) == std::isnan(want) && (std::isnan(want) || loss == want)));
      } else {
        CHECK(std::abs(loss - want) <= tol * std::max(1.0, std::abs(want)));
      }
      for (int64_t j = 0; j < n; ++j) {
        const double p = any_nan || std::isinf(mx) ? nan : std::exp(xr[j] - mx) / sum;
        const double want_g = p - (j == r.target ? 1.0 : 0.0);
        INFO("grad[" << j << "] = " << grad[j] << ", want " << want_g);
        if (std::isnan(want_g)) {
          CHECK(std::isnan(grad[j]));
        } else if (want_g == 0 && std::isinf(xr[j])) {
          CHECK(grad[j] == 0);  // a masked class: exactly 0, as PyTorch's
        } else {
          CHECK(std::abs(grad[j] - want_g) <= tol);
        }
      }
    }
  }
}

TEST_CASE("cross_entropy is one fused op each way", "[cross_entropy]") {
  Tensor x = seeded_randn({4, 5}, 1).requires_grad_(true);
  auto counter = std::make_shared<remat::testing::OpCounter>();
  int packs = 0;
  {
    autograd::saved_tensors_hooks hooks(
        [&](const Tensor& t) -> std::any {
          ++packs;
          return t.detach();
        },
        [](const std::any& a) { return std::any_cast<Tensor>(a); });
    DispatchModeGuard guard(counter);
    cross_entropy(x, longs({0, 4, 2, 2})).backward();
  }
  CHECK(counter->count("aten::cross_entropy") == 1);
  CHECK(counter->count("aten::cross_entropy_backward") == 1);
  CHECK(counter->count("aten::_softmax") == 0);
  CHECK(counter->count("aten::_log_softmax") == 0);
  CHECK(packs == 2);  // logits and targets; no softmax is kept
  REQUIRE(x.grad().defined());
  CHECK(x.grad().sizes() == Shape{4, 5});
}

TEST_CASE("cross_entropy gradcheck and second-order gradcheck on strided logits", "[cross_entropy][gradcheck]") {
  Tensor x = grad_input({5, 4}, 2);  // the logits are its transpose: [4, 5]
  Tensor t = longs({4, 0, 2, 4});
  auto fn = [&](const TL& in) { return TL{cross_entropy(transpose(in[0], 0, 1), t)}; };
  CHECK(autograd::gradcheck(fn, {x}));
  CHECK(autograd::gradgradcheck(fn, {x}));
  auto sliced = [&](const TL& in) { return TL{cross_entropy(slice(in[0], 1, 0, 4, 2), longs({1, 0, 0, 1, 1}))}; };
  CHECK(autograd::gradcheck(sliced, {x}));
  // cross_entropy_backward in grad_output and logits
  Tensor g = grad_input({}, 3);
  CHECK(autograd::gradcheck(
      [&](const TL& in) {
        return TL{cross_entropy_backward(in[0], in[1], longs({1, 1, 0}))};
      },
      {g, grad_input({3, 2}, 4)}));
}

TEST_CASE("cross_entropy in reduced precision is within tolerance of float32", "[cross_entropy][bf16]") {
  Tensor x = seeded_randn({16, 50}, 5, kFloat);
  Tensor t = longs({0, 3, 49, 7, 7, 12, 1, 0, 44, 45, 2, 9, 30, 31, 8, 16});
  for (ScalarType dt : {kBFloat16, kHalf}) {
    Tensor xl = x.to(dt), xr = xl.to(kFloat);  // reference: float32 on the rounded logits
    Tensor loss = cross_entropy(xl, t);
    CHECK(loss.dtype() == dt);
    double tol = dt == kBFloat16 ? 8e-3 : 1e-3;
    CHECK(loss.item() == Approx(cross_entropy(xr, t).item()).epsilon(tol));
    Tensor one = scalar_tensor(1.0, dt);
    CHECK(all_close(cross_entropy_backward(one, xl, t).to(kFloat), cross_entropy_backward(one.to(kFloat), xr, t), tol,
                    1e-5));
  }
}

TEST_CASE("cross_entropy ops on Meta infer shapes and allocate nothing", "[cross_entropy][meta]") {
  int64_t before = memory_allocated();
  Tensor x = meta_empty({8, 10}, kBFloat16), t = meta_empty({8}, kLong);
  Tensor loss = cross_entropy(x, t);
  CHECK(loss.is_meta());
  CHECK(loss.dim() == 0);
  CHECK(loss.dtype() == kBFloat16);
  Tensor g = cross_entropy_backward(loss, x, t);
  CHECK(g.is_meta());
  CHECK(g.sizes() == Shape{8, 10});
  CHECK(memory_allocated() == before);
}

TEST_CASE("cross_entropy errors name the op and the values", "[cross_entropy][errors]") {
  Tensor x = ones({3, 4});
  REQUIRE_THROWS_WITH(
      cross_entropy(ones({2, 3, 4}), longs({0, 1})),
      Contains("aten::cross_entropy: expected input of shape [N, C] (a 2-D tensor of logits), but got a "
               "3-D tensor of shape [2, 3, 4]"));
  REQUIRE_THROWS_WITH(cross_entropy(ones({4}), longs({0})), Contains("but got a 1-D tensor of shape [4]"));
  REQUIRE_THROWS_WITH(cross_entropy(x, ones({3})),
                      Contains("aten::cross_entropy: expected scalar type Long but found Float"));
  REQUIRE_THROWS_WITH(cross_entropy(x, from_vector({0, 1, 2}, {3, 1}, kLong)),
                      Contains("aten::cross_entropy: expected target of shape [N] (a 1-D tensor of class indices), but "
                               "got a 2-D tensor of shape [3, 1]"));
  REQUIRE_THROWS_WITH(cross_entropy(x, longs({0, 1})),
                      Contains("aten::cross_entropy: Expected input batch_size (3) to match target batch_size (2)."));
  REQUIRE_THROWS_WITH(cross_entropy(x, longs({0, 4, 1})),
                      Contains("aten::cross_entropy: Target 4 is out of bounds (at position 1; classes are 0 to 3)."));
  REQUIRE_THROWS_WITH(cross_entropy(x, longs({0, 1, -100})), Contains("Target -100 is out of bounds"));
  REQUIRE_THROWS_WITH(cross_entropy(ones({3, 4}, kLong), longs({0, 1, 2})),
                      Contains("aten::cross_entropy: expected 'self' to have a floating point dtype, but got Long"));
  REQUIRE_THROWS_WITH(cross_entropy(x, meta_empty({3}, kLong)),
                      Contains("aten::cross_entropy: Expected all tensors to be on the same device"));
  REQUIRE_THROWS_WITH(
      cross_entropy_backward(ones({2}), x, longs({0, 1, 2})),
      Contains("aten::cross_entropy_backward: Expected a single element grad_output tensor, but got shape [2]"));
  REQUIRE_THROWS_WITH(cross_entropy_backward(scalar_tensor(1.0), x, longs({0, 9, 2})),
                      Contains("aten::cross_entropy_backward: Target 9 is out of bounds"));
  REQUIRE_THROWS_WITH(cross_entropy_backward(scalar_tensor(1.0, kLong), x, longs({0, 1, 2})),
                      Contains("aten::cross_entropy_backward: expected 'grad_output' to have a floating point dtype"));
  REQUIRE_THROWS_WITH(cross_entropy_backward(meta_empty({}), x, longs({0, 1, 2})),
                      Contains("aten::cross_entropy_backward: Expected all tensors to be on the same device"));
}
