// Tests ops/reduction.cpp: sum, mean, amax, sum_to_size (values, dims, keepdim, strided
// inputs, gradients, bf16, Meta, errors) and their derivative rules.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {
// [[1,2,3],[4,5,6]]
Tensor m23(ScalarType dt = kFloat) { return tensor({1, 2, 3, 4, 5, 6}, {2, 3}, dt); }
// x[i][j][k] = 100 i + 10 j + k, shape [2,3,4]
Tensor cube() {
  std::vector<double> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) v.push_back(100 * i + 10 * j + k);
  return tensor(v, {2, 3, 4});
}
}  // namespace

TEST_CASE("sum: all elements, dims, keepdim, negative dims", "[reduction]") {
  Tensor a = m23();
  Tensor all = sum(a);
  CHECK(all.dim() == 0);
  CHECK(all.item() == 21);
  CHECK(a.sum().item() == 21);
  check_values(sum(a, {0}), {5, 7, 9});
  check_values(sum(a, {1}), {6, 15});
  check_values(sum(a, {-1}), {6, 15});
  check_values(sum(a, {-2}), {5, 7, 9});
  REQUIRE(sum(a, {1}, true).sizes() == Shape{2, 1});
  check_values(sum(a, {1}, true), {6, 15});
  REQUIRE(sum(a, {0, 1}).dim() == 0);
  CHECK(sum(a, {0, 1}).item() == 21);
  REQUIRE(sum(a, {0, 1}, true).sizes() == Shape{1, 1});
  // an empty dim list reduces everything (PyTorch's sum(dim=[]))
  CHECK(sum(a, {}).item() == 21);
  Tensor c = cube();
  // sum over i and k: sum_{i,k} (100 i + 10 j + k) = 400 + 80 j + 12
  check_values(sum(c, {0, 2}), {412, 492, 572});
  check_values(sum(c, {2, 0}), {412, 492, 572});
  REQUIRE(sum(c, {-3, -1}, true).sizes() == Shape{1, 3, 1});
  // sum over j: 300 i + 30 + 3 k
  check_values(sum(c, {1}), {30, 33, 36, 39, 330, 333, 336, 339});
  check_values(c.sum({1}, true), {30, 33, 36, 39, 330, 333, 336, 339});
  // a 0-d tensor and size-1 dims
  CHECK(sum(scalar_tensor(3.5)).item() == 3.5);
  check_values(sum(tensor({1, 2, 3}, {3, 1}), {1}), {1, 2, 3});
}

TEST_CASE("mean: values and shapes", "[reduction]") {
  Tensor a = m23();
  CHECK(mean(a).item() == 3.5);
  CHECK(a.mean().item() == 3.5);
  check_values(mean(a, {0}), {2.5, 3.5, 4.5});
  check_values(mean(a, {-1}), {2, 5});
  REQUIRE(mean(a, {1}, true).sizes() == Shape{2, 1});
  check_values(cube().mean({0, 2}), {51.5, 61.5, 71.5});  // 50 + 10 j + 1.5
  CHECK(mean(tensor({1, 2}, {2}, kDouble)).dtype() == kDouble);
}

TEST_CASE("amax: values, keepdim, negative dim, ties, NaN", "[reduction]") {
  Tensor a = tensor({1, 7, 3, 9, -5, 9}, {2, 3});
  check_values(amax(a, 0), {9, 7, 9});
  check_values(amax(a, 1), {7, 9});
  check_values(amax(a, -1), {7, 9});
  REQUIRE(amax(a, 1, true).sizes() == Shape{2, 1});
  check_values(a.amax(0, true), {9, 7, 9});
  check_values(amax(cube(), 1), {20, 21, 22, 23, 120, 121, 122, 123});
  // all-negative rows (the max is below the sum's identity 0)
  check_values(amax(tensor({-3, -1, -2}, {3}), 0), {-1});
  check_values(amax(tensor({-3, -1, -2}, {3}, kLong), 0), {-1});
  CHECK(amax(tensor({-3, -1}, {2}, kLong), 0).dtype() == kLong);
  // NaN propagates
  CHECK(std::isnan(amax(tensor({1, NAN, 3}, {3}), 0).item()));
  // a 0-d input: dim 0 or -1 reduces nothing
  CHECK(amax(scalar_tensor(2.0), 0).item() == 2.0);
  CHECK(amax(scalar_tensor(2.0), -1, true).dim() == 0);
  CHECK(sum(scalar_tensor(2.5), {0}).item() == 2.5);
  CHECK(mean(scalar_tensor(2.5), {-1}, true).dim() == 0);
  REQUIRE_THROWS_WITH(amax(scalar_tensor(2.0), 1), Contains("aten::amax") && Contains("Dimension out of range"));
}

TEST_CASE("sum, mean and amax over long rows with NaN, inf and -inf: PyTorch's values, each dim and layout",
          "[reduction]") {
  // Rows of 70 (vectors of 16 and a tail) reduced over the last dim (the row kernels) and, through
  // the transpose, over dim 0 (the column kernels), contiguous and strided: a NaN anywhere gives
  // NaN (amax too: PyTorch propagates it), inf + -inf NaN, one inf inf, all -inf -inf for amax.
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const int64_t n = 70;
  std::vector<std::vector<double>> rows;
  for (int64_t at : {int64_t{3}, int64_t{40}, int64_t{67}}) {  // a NaN in the first vector, a later one, the tail
    std::vector<double> r(n);
    for (int64_t j = 0; j < n; ++j) r[j] = j == at ? nan : 0.5 * double(j % 9) - 2;
    rows.push_back(r);
  }
  std::vector<double> both(n), one_inf(n), all_neg_inf(n, -inf);
  for (int64_t j = 0; j < n; ++j) {
    both[j] = j == 10 ? inf : j == 50 ? -inf : 1.0;
    one_inf[j] = j == 66 ? inf : -1.0 - double(j);
  }
  rows.push_back(both);
  rows.push_back(one_inf);
  rows.push_back(all_neg_inf);
  const int64_t m = static_cast<int64_t>(rows.size());
  std::vector<double> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    Tensor x = tensor(flat, {m, n}, dt);
    const Tensor layouts[] = {x, x.t().contiguous().t()};  // contiguous rows; the same values column-major
    for (const Tensor& xs : layouts) {
      for (int64_t dim : {int64_t{1}, int64_t{0}}) {
        Tensor src = dim == 1 ? xs : xs.t();  // reduce the rows over `dim` of src
        const std::vector<double> s = sum(src, {dim}).to(kDouble).to_vector();
        const std::vector<double> mn = mean(src, {dim}).to(kDouble).to_vector();
        const std::vector<double> mx = amax(src, dim).to(kDouble).to_vector();
        for (int64_t r = 0; r < m; ++r) {
          bool any_nan = false, pos = false, neg = false;
          double want_max = -inf;
          for (double v : rows[static_cast<size_t>(r)]) {
            any_nan |= std::isnan(v);
            pos |= v == inf;
            neg |= v == -inf;
            want_max = std::max(want_max, v);
          }
          INFO(toString(dt) << (xs.is_contiguous() ? " contiguous" : " strided") << ", dim " << dim << ", row " << r
                            << ": sum " << s[r] << ", mean " << mn[r] << ", amax " << mx[r]);
          if (any_nan || (pos && neg)) {
            CHECK(std::isnan(s[r]));
            CHECK(std::isnan(mn[r]));
          } else if (pos || neg) {
            CHECK(s[r] == (pos ? inf : -inf));
            CHECK(mn[r] == (pos ? inf : -inf));
          }
          if (any_nan) {
            CHECK(std::isnan(mx[r]));
          } else {
            CHECK(mx[r] == want_max);
          }
        }
      }
    }
  }
}

TEST_CASE("reductions: integer and bool inputs", "[reduction]") {
  Tensor l = m23(kLong);
  CHECK(sum(l).dtype() == kLong);
  CHECK(sum(l).item() == 21);
  check_values(sum(l, {0}), {5, 7, 9});
  Tensor b = tensor({1, 0, 1, 1}, {4}, kBool);
  CHECK(sum(b).dtype() == kLong);
  CHECK(sum(b).item() == 3);
  REQUIRE_THROWS_WITH(mean(l), Contains("aten::mean") && Contains("floating point") && Contains("Long"));
  REQUIRE_THROWS_WITH(mean(meta({2}, kLong)), Contains("aten::mean") && Contains("Long"));
}

TEST_CASE("reductions on empty tensors follow PyTorch", "[reduction]") {
  CHECK(sum(zeros({0, 3})).item() == 0);
  check_values(sum(zeros({0, 3}), {0}), {0, 0, 0});
  REQUIRE(sum(zeros({0, 3}), {1}).sizes() == Shape{0});
  // the mean of no elements is NaN (0/0)
  CHECK(std::isnan(mean(zeros({0})).item()));
  Tensor mcols = mean(zeros({0, 2}), {0});
  REQUIRE(mcols.sizes() == Shape{2});
  CHECK(std::isnan(mcols.to_vector()[0]));
  REQUIRE_THROWS_WITH(amax(zeros({0, 3}), 1), Contains("aten::amax") && Contains("non-zero size"));
}

TEST_CASE("reductions read strided inputs and large inputs correctly", "[reduction]") {
  Tensor base = randn_seeded({33, 70}, 5, kDouble);
  Tensor t = base.t();
  Tensor st = base.slice(1, 1, 70, 3);
  Tensor e = tensor({1, 2, 3}, {3, 1}, kDouble).expand({3, 50});
  for (const Tensor& x : {t, st, e}) {
    Tensor xc = x.contiguous();
    for (const Shape& dims : {Shape{0}, Shape{1}, Shape{0, 1}, Shape{-1}}) {
      check_close(sum(x, dims), sum(xc, dims), 1e-10);
      check_close(mean(x, dims, true), mean(xc, dims, true), 1e-10);
    }
    check_close(amax(x, 0), amax(xc, 0));
    check_close(amax(x, 1), amax(xc, 1));
  }
  // against a plain loop
  std::vector<double> v = base.to_vector();
  double total = 0, row0 = 0, col0 = 0;
  for (double x : v) total += x;
  for (int j = 0; j < 70; ++j) row0 += v[j];
  for (int i = 0; i < 33; ++i) col0 += v[i * 70];
  CHECK(sum(base).item() == Approx(total).epsilon(1e-12));
  CHECK(sum(base, {1}).to_vector()[0] == Approx(row0).epsilon(1e-12));
  CHECK(sum(base, {0}).to_vector()[0] == Approx(col0).epsilon(1e-12));
  CHECK(sum(t, {1}).to_vector()[0] == Approx(col0).epsilon(1e-12));
  check_values(sum(e, {1}), {50, 100, 150});
}

TEST_CASE("sum_to_size: sums broadcast dims back", "[reduction]") {
  Tensor c = cube();
  Tensor r = sum_to_size(c, {3, 1});
  REQUIRE(r.sizes() == Shape{3, 1});
  // sum over i and k
  check_values(r, {412, 492, 572});
  check_values(sum_to_size(c, {1, 3, 1}), {412, 492, 572});
  REQUIRE(sum_to_size(c, {4}).sizes() == Shape{4});
  check_values(sum_to_size(c, {4}), {360, 366, 372, 378});  // 300 + 60 + 6 k
  CHECK(sum_to_size(c, {2, 3, 4}).is_same(c));
  CHECK(sum_to_size(c, {}).item() == sum(c).item());
  REQUIRE_THROWS_WITH(sum_to_size(c, {5}), Contains("aten::sum_to_size") && Contains("[5]") && Contains("[2, 3, 4]"));
  REQUIRE_THROWS_WITH(sum_to_size(c, {1, 1, 3, 4}), Contains("aten::sum_to_size") && Contains("[2, 3, 4]"));
}

// ---------------------------------------------------------------------------------------------
// gradients
// ---------------------------------------------------------------------------------------------

TEST_CASE("reduction gradients: values", "[reduction][autograd]") {
  Tensor x = leaf({2, 3}, 1);
  sum(x, {1}, true).sum().backward();
  check_values(x.grad(), std::vector<double>(6, 1.0));
  Tensor y = leaf({2, 3}, 2);
  mean(y, {-1}).sum().backward();
  check_values(y.grad(), std::vector<double>(6, 1.0 / 3));
  Tensor z = leaf({4}, 3);
  mean(z).backward();
  check_values(z.grad(), std::vector<double>(4, 0.25));
  // amax: ties share the gradient evenly (PyTorch's amax backward)
  Tensor w = from_vector({1, 5, 5, 2, 3, 3, 3, 0}, {2, 4}, TensorOptions().dtype(kDouble).requires_grad(true));
  mul(amax(w, 1), tensor({10, 30}, {2}, kDouble)).sum().backward();
  check_values(w.grad(), {0, 5, 5, 0, 10, 10, 10, 0});
  Tensor u = from_vector({2, 2, 1, 2}, {2, 2}, TensorOptions().dtype(kDouble).requires_grad(true));
  amax(u, 0, true).sum().backward();
  check_values(u.grad(), {1, 0.5, 0, 0.5});
}

TEST_CASE("gradcheck: sum, mean, amax over dims, keepdim, negative dims, strided inputs",
          "[reduction][gradcheck]") {
  Tensor c = leaf({2, 3, 4}, 11);
  Tensor t = transposed_leaf({3, 4}, 12), s = stepped_leaf({3, 4}, 13);
  REQUIRE(gradcheck1([](auto& x) { return sum(x[0]); }, {c}));
  REQUIRE(gradcheck1([](auto& x) { return mean(x[0]); }, {c}));
  for (const Shape& dims : {Shape{0}, Shape{1}, Shape{-1}, Shape{0, 2}, Shape{-3, -2}}) {
    for (bool keepdim : {false, true}) {
      INFO("dims " << str(dims) << " keepdim " << keepdim);
      REQUIRE(gradcheck1([dims, keepdim](auto& x) { return sum(x[0], dims, keepdim); }, {c}));
      REQUIRE(gradcheck1([dims, keepdim](auto& x) { return mean(x[0], dims, keepdim); }, {c}));
    }
  }
  for (const Tensor& x : {t, s}) {
    REQUIRE(gradcheck1([](auto& x) { return sum(x[0], {0}); }, {x}));
    REQUIRE(gradcheck1([](auto& x) { return mean(x[0], {-1}, true); }, {x}));
    REQUIRE(gradcheck1([](auto& x) { return amax(x[0], 0); }, {x}));
    REQUIRE(gradcheck1([](auto& x) { return amax(x[0], -1, true); }, {x}));
  }
  REQUIRE(gradcheck1([](auto& x) { return amax(x[0], 1); }, {c}));
  REQUIRE(gradcheck1([](auto& x) { return mean(x[0].expand({2, 3, 4}), {0, 2}); }, {leaf({3, 1}, 14)}));
  // two-way ties: the central difference also splits evenly
  Tensor tie = from_vector({1, 3, 3, 0, 2, 2}, {2, 3}, TensorOptions().dtype(kDouble).requires_grad(true));
  REQUIRE(gradcheck1([](auto& x) { return amax(x[0], 1); }, {tie}));
  REQUIRE(gradcheck1([](auto& x) { return sum_to_size(x[0], {3, 1}); }, {c}));
  // 0-d inputs
  Tensor z = leaf({}, 15);
  REQUIRE(gradcheck1([](auto& x) { return sum(x[0], {0}); }, {z}));
  REQUIRE(gradcheck1([](auto& x) { return mean(x[0], {-1}); }, {z}));
  REQUIRE(gradcheck1([](auto& x) { return amax(x[0], 0); }, {z}));
  REQUIRE(gradcheck1([](auto& x) { return sum(x[0]); }, {z}));
}

TEST_CASE("gradgradcheck: sum and mean", "[reduction][gradcheck]") {
  REQUIRE(gradgradcheck1([](auto& x) { return mul(sum(x[0], {1}, true), x[0]); }, {leaf({2, 3}, 21)}));
  REQUIRE(gradgradcheck1([](auto& x) { return mul(mean(x[0], {0}), mean(x[0], {0})); }, {leaf({2, 3}, 22)}));
}

// ---------------------------------------------------------------------------------------------
// bf16, Meta, errors
// ---------------------------------------------------------------------------------------------

TEST_CASE("bf16: reductions are within bf16 tolerance of float32, stored in bf16", "[reduction][bf16]") {
  Tensor a = randn_seeded({16, 40}, 31, kFloat);
  check_bf16_matches_f32([](auto& x) { return sum(x[0]); }, {a}, 1e-2, 5e-2);
  check_bf16_matches_f32([](auto& x) { return sum(x[0], {0}); }, {a}, 1e-2, 2e-2);
  check_bf16_matches_f32([](auto& x) { return sum(x[0], {1}, true); }, {a}, 1e-2, 2e-2);
  check_bf16_matches_f32([](auto& x) { return mean(x[0]); }, {a});
  check_bf16_matches_f32([](auto& x) { return mean(x[0], {-1}); }, {a});
  check_bf16_matches_f32([](auto& x) { return mean(x[0].t(), {0}); }, {a});
  check_bf16_matches_f32([](auto& x) { return amax(x[0], 0); }, {a});
  check_bf16_matches_f32([](auto& x) { return amax(x[0], 1, true); }, {a});
  check_bf16_matches_f32([](auto& x) { return sum_to_size(x[0], {1, 40}); }, {a}, 1e-2, 2e-2);
  // a long bf16 sum accumulates in float: 4096 ones sum to 4096 exactly (bf16 holds it)
  CHECK(sum(ones({4096}, kBFloat16)).item() == 4096);
}

TEST_CASE("Meta: reductions infer shapes and dtypes and allocate nothing", "[reduction][meta]") {
  Tensor a = meta({2, 3, 4});
  int64_t before = memory_allocated(Device{kCPU});
  CHECK(sum(a).sizes() == Shape{});
  CHECK(sum(a).is_meta());
  CHECK(sum(a, {0, 2}).sizes() == Shape{3});
  CHECK(sum(a, {-1}, true).sizes() == Shape{2, 3, 1});
  CHECK(mean(a, {1}).sizes() == Shape{2, 4});
  CHECK(mean(meta({3}, kBFloat16)).dtype() == kBFloat16);
  CHECK(amax(a, 1, true).sizes() == Shape{2, 1, 4});
  CHECK(amax(a, -1).sizes() == Shape{2, 3});
  CHECK(sum(meta({3}, kBool)).dtype() == kLong);
  CHECK(sum(meta({3}, kLong)).dtype() == kLong);
  CHECK(sum_to_size(a, {3, 1}).sizes() == Shape{3, 1});
  Tensor w = meta({2, 3}).requires_grad_();
  mean(amax(w, 0)).backward();
  CHECK(w.grad().is_meta());
  CHECK(w.grad().sizes() == Shape{2, 3});
  CHECK(memory_allocated(Device{kCPU}) == before);
}

TEST_CASE("reduction error paths", "[reduction][errors]") {
  Tensor a = zeros({2, 3});
  REQUIRE_THROWS_WITH(sum(a, {2}), Contains("aten::sum") && Contains("Dimension out of range") && Contains("got 2"));
  REQUIRE_THROWS_WITH(sum(a, {-3}), Contains("Dimension out of range"));
  REQUIRE_THROWS_WITH(mean(a, {5}), Contains("aten::mean") && Contains("Dimension out of range"));
  REQUIRE_THROWS_WITH(amax(a, 2), Contains("aten::amax") && Contains("Dimension out of range"));
  REQUIRE_THROWS_WITH(amax(meta({2, 3}), -3), Contains("aten::amax") && Contains("Dimension out of range"));
  REQUIRE_THROWS_WITH(sum(a, {1, -1}), Contains("aten::sum") && Contains("appears multiple times"));
  REQUIRE_THROWS_WITH(sum(meta({2, 3}), {0, 0}), Contains("appears multiple times"));
  REQUIRE_THROWS_WITH(sum(Tensor()), Contains("aten::sum"));
}
