// Tests ops/softmax.cpp: softmax, log_softmax, _softmax_backward_data, _log_softmax_backward_data.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

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

TEST_CASE("softmax and log_softmax of rows with -inf, inf and NaN: PyTorch's values, over the last dim or another",
          "[softmax]") {
  // The last dim runs the row kernels (AVX-512 for float and bfloat16), another dim the slab of
  // running columns: both must give PyTorch's values. A row of all -inf is NaN (exp(-inf - -inf));
  // a row with +inf or NaN is NaN throughout; -inf entries among finite ones are 0 (log: -inf).
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const int64_t n = 40;  // two vectors of 16 and a tail
  std::vector<std::vector<double>> rows(6, std::vector<double>(n));
  for (int64_t j = 0; j < n; ++j) {
    rows[0][j] = -inf;                                  // all masked
    rows[1][j] = j == 17 ? inf : 0.1 * double(j);       // one +inf
    rows[2][j] = j == 33 ? nan : 0.1 * double(j);       // one NaN (in the tail)
    rows[3][j] = j % 3 == 0 ? -inf : 0.25 * double(j);  // a causal-like mix
    rows[4][j] = 1e4 + double(j % 5);                   // large: shifted by the max
    rows[5][j] = j < 16 ? -inf : -1e4 - double(j);      // a masked vector, then very negative
  }
  std::vector<double> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    const double tol = dt == kBFloat16 ? 1e-2 : dt == kFloat ? 1e-6 : 1e-13;
    Tensor x = from_vector(flat, {6, n}, dt);
    Tensor xt = x.t().contiguous();  // [n, 6]: softmax over dim 0 is the same rows
    const std::vector<double> xd = x.to(kDouble).to_vector();  // the values as rounded to dt
    for (bool log : {false, true}) {
      std::vector<double> last = (log ? log_softmax(x, -1) : softmax(x, -1)).to(kDouble).to_vector();
      std::vector<double> other =
          (log ? log_softmax(xt, 0) : softmax(xt, 0)).t().contiguous().to(kDouble).to_vector();
      for (size_t r = 0; r < rows.size(); ++r) {
        // the reference in double
        const std::vector<double> xr(xd.begin() + r * n, xd.begin() + (r + 1) * n);
        double mx = -inf;
        bool any_nan = false;
        for (double v : xr) any_nan |= std::isnan(v), mx = std::max(mx, v);
        double sum = 0;
        for (double v : xr) sum += std::exp(v - mx);
        for (int64_t j = 0; j < n; ++j) {
          const size_t k = r * n + j;
          const double want = any_nan || std::isinf(mx) ? nan
                              : log                        ? xr[j] - mx - std::log(sum)
                                                           : std::exp(xr[j] - mx) / sum;
          INFO((log ? "log_softmax" : "softmax") << " " << toString(dt) << " row " << r << " element " << j << " (x = "
                                                  << xr[j] << "): last dim " << last[k] << ", dim 0 " << other[k]
                                                  << ", want " << want);
          for (double got : {last[k], other[k]}) {
            if (std::isnan(want) || std::isinf(want) || want == 0) {  // a masked entry is exactly 0
              CHECK((std::isnan(got) == std::isnan(want) && (std::isnan(want) || got == want)));
            } else {
              CHECK(std::abs(got - want) <= tol * std::max(1.0, std::abs(want)));
            }
          }
        }
      }
    }
  }
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
  CHECK(counter->count("aten::_softmax") == 1);
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
  CHECK_THROWS_WITH(softmax(x, 3), Contains("aten::_softmax: Dimension out of range"));
}

TEST_CASE("softmax errors name the op and the values", "[softmax][errors]") {
  Tensor x = ones({2, 3});
  REQUIRE_THROWS_WITH(
      softmax(x, 2), Contains("aten::_softmax: Dimension out of range (expected to be in range of [-2, 1], but got 2)"));
  REQUIRE_THROWS_WITH(log_softmax(x, -3), Contains("aten::_log_softmax: Dimension out of range"));
  REQUIRE_THROWS_WITH(softmax(ones({2}, kLong), 0),
                      Contains("aten::_softmax: expected 'self' to have a floating point dtype, but got Long"));
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

// ---- _masked_softmax and _masked_softmax_backward ----

namespace {

// A Bool mask of shape, about half of it true (masked out), from seed.
Tensor random_mask(const Shape& shape, uint64_t seed) {
  Tensor x = relu(seeded_randn(shape, seed));
  return eq(x, zeros_like(x));
}

// The composite _masked_softmax replaces: masked_fill with -inf, softmax, zeros for the rows
// masked throughout.
Tensor masked_softmax_reference(const Tensor& x, const Tensor& mask) {
  Tensor y = softmax(masked_fill(x, mask, -INFINITY), -1);
  return where(eq(y, y), y, zeros_like(y));  // a row masked throughout: NaN from softmax, 0 here
}

}  // namespace

TEST_CASE("_masked_softmax matches masked_fill and softmax, masked entries and rows zero", "[softmax][masked]") {
  Tensor x = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, kDouble);
  Tensor mask = from_vector({0, 1, 0, 1, 1, 1}, {2, 3}, kBool);
  // row 0: softmax of {1, 3}; row 1 masked throughout
  check_values(_masked_softmax(x, mask), {0.11920292202211755, 0.0, 0.8807970779778823, 0.0, 0.0, 0.0});
  for (ScalarType dt : {kDouble, kFloat}) {
    for (int64_t len : {1, 7, 33, 130}) {
      Tensor xs = seeded_randn({2, 3, 5, len}, 61, dt);
      Tensor full_mask = random_mask({2, 3, 5, len}, 62);
      INFO(toString(dt) << ", rows of " << len);
      CHECK(max_abs_diff(_masked_softmax(xs, full_mask), masked_softmax_reference(xs, full_mask)) < 1e-6);
      // an [L, S] mask (mask_type 0) is every batch and head's: the same as it expanded
      Tensor ls = random_mask({5, len}, 63);
      Tensor expanded = expand(ls, {2, 3, 5, len}).contiguous();
      CHECK(max_abs_diff(_masked_softmax(xs, ls, -1, 0), _masked_softmax(xs, expanded)) == 0.0);
      CHECK(max_abs_diff(_masked_softmax(xs, ls, 3, 0), masked_softmax_reference(xs, expanded)) < 1e-6);
    }
  }
  // the causal mask of attention: the first row keeps only its first score
  Tensor causal = triu(ones({4, 4}, TensorOptions().dtype(kBool)), 1);
  Tensor y = _masked_softmax(seeded_randn({1, 2, 4, 4}, 64), causal, -1, 0);
  CHECK(y.to_vector()[0] == 1.0);
  CHECK(max_abs_diff(sum(y, {3}), ones({1, 2, 4}, TensorOptions().dtype(kDouble))) < 1e-12);
}

TEST_CASE("_masked_softmax of strided operands matches the contiguous ones", "[softmax][masked]") {
  Tensor x = transpose(seeded_randn({6, 4}, 65), 0, 1);
  Tensor mask = transpose(random_mask({6, 4}, 66), 0, 1);
  REQUIRE_FALSE(x.is_contiguous());
  CHECK(max_abs_diff(_masked_softmax(x, mask), _masked_softmax(x.contiguous(), mask.contiguous())) == 0.0);
  Tensor y = _masked_softmax(x, mask), g = transpose(seeded_randn({6, 4}, 67), 0, 1);
  CHECK(max_abs_diff(_masked_softmax_backward(g, y, mask), _masked_softmax_backward(g.contiguous(), y, mask.contiguous())) ==
        0.0);
}

TEST_CASE("_masked_softmax_backward matches the formula, zero where masked", "[softmax][masked]") {
  Tensor x = seeded_randn({3, 4, 9}, 71), g = seeded_randn({3, 4, 9}, 72);
  Tensor mask = random_mask({3, 4, 9}, 73);
  Tensor y = _masked_softmax(x, mask);
  Tensor expected = masked_fill(_softmax_backward_data(g, y, -1), mask, 0.0);
  CHECK(max_abs_diff(_masked_softmax_backward(g, y, mask), expected) < 1e-15);
  // [L, S] masks in the backward too (remat's; PyTorch's takes grad's shape only)
  Tensor x4 = seeded_randn({2, 2, 4, 9}, 74), g4 = seeded_randn({2, 2, 4, 9}, 75);
  Tensor ls = random_mask({4, 9}, 76);
  Tensor y4 = _masked_softmax(x4, ls, -1, 0);
  CHECK(max_abs_diff(_masked_softmax_backward(g4, y4, ls, -1),
                     _masked_softmax_backward(g4, y4, expand(ls, {2, 2, 4, 9}).contiguous())) == 0.0);
}

TEST_CASE("_masked_softmax gradcheck in float64, [L, S] and full masks, strided inputs", "[softmax][masked][gradcheck]") {
  Tensor causal = triu(ones({3, 5}, TensorOptions().dtype(kBool)), 1);
  Tensor x = grad_input({2, 2, 3, 5}, 81);
  CHECK(autograd::gradcheck(
      [causal](const std::vector<Tensor>& in) { return std::vector<Tensor>{_masked_softmax(in[0], causal, -1, 0)}; },
      {x}));
  Tensor mask = random_mask({5, 4}, 82);  // a row masked throughout is likely among them
  Tensor xt = grad_input({4, 5}, 83);
  CHECK(autograd::gradcheck(
      [mask](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{_masked_softmax(transpose(in[0], 0, 1), mask)};
      },
      {xt}));
  CHECK(autograd::gradgradcheck(
      [causal](const std::vector<Tensor>& in) { return std::vector<Tensor>{_masked_softmax(in[0], causal, -1, 0)}; },
      {x}));
  // the backward op in both its arguments
  Tensor g = grad_input({2, 2, 3, 5}, 84), y = grad_input({2, 2, 3, 5}, 85);
  CHECK(autograd::gradcheck(
      [causal](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{_masked_softmax_backward(in[0], in[1], causal, -1)};
      },
      {g, y}));
}

TEST_CASE("_masked_softmax in BFloat16 is within tolerance of float32", "[softmax][masked][bf16]") {
  for (int64_t len : {5, 33, 257}) {
    Tensor x = seeded_randn({2, 3, 4, len}, 91, kFloat);
    Tensor ls = random_mask({4, len}, 92);
    Tensor ref = _masked_softmax(x, ls, -1, 0);
    Tensor s = _masked_softmax(x.to(kBFloat16), ls, -1, 0);
    CHECK(s.dtype() == kBFloat16);
    CHECK(remat::testing::all_close(s.to(kFloat), ref, 2e-2, 1e-3));
    Tensor g = seeded_randn({2, 3, 4, len}, 93, kFloat);
    CHECK(remat::testing::all_close(_masked_softmax_backward(g.to(kBFloat16), s, ls, -1).to(kFloat),
                                    _masked_softmax_backward(g, ref, ls, -1), 2e-2, 1e-2));
  }
}

TEST_CASE("_masked_softmax autograd runs the fused backward, which saves the output and the mask",
          "[softmax][masked]") {
  Tensor x = seeded_randn({1, 2, 4, 4}, 95).requires_grad_(true);
  Tensor causal = triu(ones({4, 4}, TensorOptions().dtype(kBool)), 1);
  auto counter = std::make_shared<remat::testing::OpCounter>();
  {
    DispatchModeGuard guard(counter);
    Tensor y = _masked_softmax(x, causal, -1, 0);
    sum(mul(y, y)).backward();
  }
  CHECK(counter->count("aten::_masked_softmax") == 1);
  CHECK(counter->count("aten::_masked_softmax_backward") == 1);
  CHECK(counter->count("aten::_softmax") == 0);
  REQUIRE(x.grad().defined());
}

TEST_CASE("_masked_softmax on Meta infers shapes and allocates nothing", "[softmax][masked][meta]") {
  int64_t before = memory_allocated();
  Tensor x = remat::testing::meta_empty({2, 3, 4, 5}, kBFloat16);
  Tensor m = remat::testing::meta_empty({4, 5}, kBool);
  Tensor y = _masked_softmax(x, m, -1, 0), g = _masked_softmax_backward(y, y, m, 3);
  for (const Tensor& t : {y, g}) {
    CHECK(t.is_meta());
    CHECK(t.sizes() == Shape{2, 3, 4, 5});
    CHECK(t.dtype() == kBFloat16);
  }
  CHECK(memory_allocated() == before);
}

TEST_CASE("_masked_softmax errors name the op and the values", "[softmax][masked][errors]") {
  Tensor x = ones({2, 3}), x4 = ones({1, 2, 4, 5});
  Tensor m = zeros({2, 3}, TensorOptions().dtype(kBool));
  REQUIRE_THROWS_WITH(_masked_softmax(x, ones({2, 3})),
                      Contains("aten::_masked_softmax: Mask should be a boolean tensor, got Float"));
  REQUIRE_THROWS_WITH(_masked_softmax(x, zeros({3, 3}, TensorOptions().dtype(kBool))),
                      Contains("aten::_masked_softmax: For mask_type == 2 mask shape should match input shape [2, 3], "
                               "got [3, 3]"));
  REQUIRE_THROWS_WITH(_masked_softmax(x4, zeros({5, 4}, TensorOptions().dtype(kBool)), -1, 0),
                      Contains("aten::_masked_softmax: For mask_type == 0 mask shape should be (L, S) = [4, 5], got "
                               "[5, 4]"));
  REQUIRE_THROWS_WITH(_masked_softmax(x4, zeros({1, 5}, TensorOptions().dtype(kBool)), -1, 1),
                      Contains("aten::_masked_softmax: Unsupported mask type 1"));
  REQUIRE_THROWS_WITH(_masked_softmax(x4, zeros({4, 5}, TensorOptions().dtype(kBool))),
                      Contains("aten::_masked_softmax: Unsupported mask type None"));
  REQUIRE_THROWS_WITH(_masked_softmax(x, m, 0),
                      Contains("aten::_masked_softmax: remat's kernel takes only the last dim (1 of a 2-d input), got "
                               "dim = 0"));
  REQUIRE_THROWS_WITH(_masked_softmax(x, m, 2), Contains("aten::_masked_softmax: Dimension out of range"));
  REQUIRE_THROWS_WITH(_masked_softmax(ones({2, 3}, kLong), m),
                      Contains("aten::_masked_softmax: expected 'self' to have a floating point dtype, but got Long"));
  REQUIRE_THROWS_WITH(_masked_softmax(scalar_tensor(1.0), scalar_tensor(0.0, TensorOptions().dtype(kBool))),
                      Contains("aten::_masked_softmax: remat's kernel needs a input of at least 1 dim, got a 0-d input"));
  REQUIRE_THROWS_WITH(_masked_softmax(x, remat::testing::meta_empty({2, 3}, kBool)),
                      Contains("aten::_masked_softmax: Expected all tensors to be on the same device"));
  REQUIRE_THROWS_WITH(_masked_softmax(Tensor(), m),
                      Contains("aten::_masked_softmax: argument 'self' is an undefined tensor"));
  REQUIRE_THROWS_WITH(_masked_softmax_backward(x, x, zeros({3}, TensorOptions().dtype(kBool))),
                      Contains("aten::_masked_softmax_backward: For mask_type == 2 mask shape should match grad shape "
                               "[2, 3], got [3]"));
  REQUIRE_THROWS_WITH(_masked_softmax_backward(x, ones({3, 2}), m),
                      Contains("aten::_masked_softmax_backward: grad_output of shape [2, 3] does not match output of "
                               "shape [3, 2]"));
  REQUIRE_THROWS_WITH(_masked_softmax_backward(x, x, ones({2, 3})),
                      Contains("aten::_masked_softmax_backward: Mask should be a boolean tensor, got Float"));
  REQUIRE_THROWS_WITH(_masked_softmax_backward(x, x, m, 0),
                      Contains("aten::_masked_softmax_backward: remat's kernel takes only the last dim"));
}
