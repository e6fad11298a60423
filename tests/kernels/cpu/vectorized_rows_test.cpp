// Tests kernels/cpu/vectorized_rows.h (ATen/cpu/vec/functional_base.h's reduce_all family):
// the Eigen (float) path against sums in double, and the bfloat16 path (widened blocks) against it.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/vectorized_rows.h"

namespace rows = remat::kernels::cpu::rows;
using remat::BFloat16;

TEST_CASE("row reductions match double sums, for every length around the packet size", "[vectorized_rows]") {
  for (int64_t n : {0, 1, 7, 15, 16, 17, 33, 1000, 1001}) {
    INFO("n = " << n);
    std::vector<float> x(n), y(n);
    double sum = 0, dot = 0, max = -INFINITY, sum_exp = 0, sq = 0;
    for (int64_t k = 0; k < n; ++k) {
      x[k] = std::sin(0.37f * k) * 3;
      y[k] = std::cos(0.11f * k);
      sum += x[k];
      dot += double(x[k]) * y[k];
      max = std::max(max, double(x[k]));
    }
    for (int64_t k = 0; k < n; ++k) {
      sum_exp += std::exp(x[k] - 1.5);
      sq += (x[k] - 0.25) * (x[k] - 0.25);
    }
    const double tol = 1e-5 * (1 + n);
    CHECK(rows::sum(x.data(), n) == Approx(sum).margin(tol));
    CHECK(rows::dot(x.data(), y.data(), n) == Approx(dot).margin(tol));
    CHECK(rows::max(x.data(), n) == (n == 0 ? -std::numeric_limits<float>::infinity() : float(max)));
    CHECK(rows::sum_exp(x.data(), n, 1.5f) == Approx(sum_exp).epsilon(1e-5).margin(tol));
    CHECK(rows::sum_sq_dev(x.data(), n, 0.25f) == Approx(sq).epsilon(1e-5).margin(tol));
  }
}

TEST_CASE("bfloat16 rows accumulate in float", "[vectorized_rows]") {
  // 300 ones: a bf16 accumulator would stop at 256 (its 8-bit mantissa); float gets 300.
  std::vector<BFloat16> ones(300, BFloat16(1.0f));
  float s = rows::sum(ones.data(), 300);
  CHECK(s == 300.0f);
  CHECK(rows::dot(ones.data(), ones.data(), 300) == 300.0f);
  CHECK(rows::max(ones.data(), 300) == 1.0f);
}

TEST_CASE("a bfloat16 row up to one block is reduced by the float code on its widened values, exactly; longer "
          "rows block by block",
          "[vectorized_rows]") {
  using remat::kernels::cpu::kFloatBlock;
  for (int64_t n : {int64_t{1}, int64_t{17}, int64_t{1000}, kFloatBlock, kFloatBlock + 1, 3 * kFloatBlock + 5}) {
    INFO("n = " << n);
    std::vector<BFloat16> xb(n), yb(n);
    std::vector<float> x(n), y(n);
    for (int64_t k = 0; k < n; ++k) {
      xb[k] = BFloat16(std::sin(0.37f * k) * 3);
      yb[k] = BFloat16(std::cos(0.11f * k));
      x[k] = float(xb[k]);
      y[k] = float(yb[k]);
    }
    if (n <= kFloatBlock) {  // one block: the very float computation
      CHECK(rows::sum(xb.data(), n) == rows::sum(x.data(), n));
      CHECK(rows::dot(xb.data(), yb.data(), n) == rows::dot(x.data(), y.data(), n));
      CHECK(rows::sum_exp(xb.data(), n, 1.5f) == rows::sum_exp(x.data(), n, 1.5f));
      CHECK(rows::sum_sq_dev(xb.data(), n, 0.25f) == rows::sum_sq_dev(x.data(), n, 0.25f));
    }
    // any length: the float result up to float rounding of the blocks' partial sums
    const double tol = 1e-5 * (1 + n);
    CHECK(rows::sum(xb.data(), n) == Approx(rows::sum(x.data(), n)).margin(tol));
    CHECK(rows::dot(xb.data(), yb.data(), n) == Approx(rows::dot(x.data(), y.data(), n)).margin(tol));
    CHECK(rows::sum_exp(xb.data(), n, 1.5f) == Approx(rows::sum_exp(x.data(), n, 1.5f)).epsilon(1e-5));
    CHECK(rows::sum_sq_dev(xb.data(), n, 0.25f) == Approx(rows::sum_sq_dev(x.data(), n, 0.25f)).epsilon(1e-5));
    CHECK(rows::max(xb.data(), n) == rows::max(x.data(), n));
  }
}
