// Tests kernels/cpu/vectorized_rows.h (ATen/cpu/vec/functional_base.h's reduce_all family):
// the Eigen (float) and scalar (bfloat16) paths against sums in double.
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
