// Tests kernels/cpu/activation.h (the vectorized GELU and SiLU backward of ATen/native/cpu/Activation.cpp) against
// the scalar formulas in double, over the range where GELU and its derivative change.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/cpu/activation.h"

namespace kc = remat::kernels::cpu;

namespace {
double gelu_ref(double x, bool tanh_form) {
  if (tanh_form) return 0.5 * x * (1 + std::tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
  return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
}
// The tanh form as a sigmoid in double, x / (1 + exp(-2u)): exact to double's rounding where
// 1 + tanh(u) would cancel (x far below 0).
double gelu_ref_sigmoid(double x) {
  return x / (1 + std::exp(-2 * 0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}
// Central difference of the reference in double: an independent check of the derivative formula.
double gelu_grad_ref(double x, bool tanh_form) {
  const double h = 1e-6;
  return (gelu_ref(x + h, tanh_form) - gelu_ref(x - h, tanh_form)) / (2 * h);
}
// d/dx of the tanh form, analytically in double (a central difference cannot resolve values of 1e-20).
double gelu_tanh_grad_exact(double x) {  // x < 0 only
  const double beta = 0.79788456080286535588, kappa = 0.044715;
  // For u < 0, with e = exp(2u): 1 + t = 2e/(1+e) and 1 - t^2 = 4e/(1+e)^2, with no cancellation.
  const double u = beta * (x + kappa * x * x * x), e = std::exp(2 * u);
  const double one_plus_t = 2 * e / (1 + e), one_minus_t2 = 4 * e / ((1 + e) * (1 + e));
  return 0.5 * one_plus_t + 0.5 * x * one_minus_t2 * beta * (1 + 3 * kappa * x * x);
}
}  // namespace

TEST_CASE("gelu kernels match the scalar formulas in float, both forms", "[activation]") {
  // 70001 points in [-10, 10], odd length so the vector loop's tail runs too.
  const int64_t n = 70001;
  std::vector<float> x(n), y(n), g(n, 1.0f), gx(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -10.0f + 20.0f * static_cast<float>(i) / (n - 1);
  for (bool tanh_form : {true, false}) {
    INFO("tanh_form " << tanh_form);
    kc::gelu_contiguous(y.data(), x.data(), n, tanh_form);
    kc::gelu_backward_contiguous(gx.data(), g.data(), x.data(), n, tanh_form);
    double worst_y = 0, worst_g = 0;
    for (int64_t i = 0; i < n; ++i) {
      worst_y = std::max(worst_y, std::abs(y[i] - gelu_ref(x[i], tanh_form)) / (1 + std::abs(gelu_ref(x[i], tanh_form))));
      worst_g = std::max(worst_g, std::abs(gx[i] - gelu_grad_ref(x[i], tanh_form)));
    }
    // float carries 6e-8 relative; a few ulp of packet math plus rounding of the sums.
    CHECK(worst_y < 1e-6);
    // The central difference itself is good to ~1e-9; the rest is float rounding (the scalar
    // std::tanh path in float is off by 5.6e-7 at worst on these points).
    CHECK(worst_g < 1e-6);
  }
}

TEST_CASE("gelu (tanh) gives each element the same bits wherever it falls: the vector loops and the tail",
          "[activation]") {
  // Lengths around 16 and 32 (the 32-wide loop, the 16-wide one and the tail), then a long run;
  // each element against gelu_run of that element alone (the tail's path).
  std::vector<float> x(70001);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -12.0f + 24.0f * static_cast<float>(i) / (x.size() - 1);
  x[7] = 0.0f;
  x[8] = -0.0f;
  x[9] = 1e-30f;
  for (int64_t n : {1, 15, 16, 17, 31, 32, 33, 47, 70, 70001}) {
    INFO("n " << n);
    std::vector<float> got(n);
    kc::gelu_run(got.data(), x.data(), n, /*tanh_form=*/true);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; ++i) {
      float alone = 0;
      kc::gelu_run(&alone, &x[i], 1, true);
      differ += std::memcmp(&got[i], &alone, sizeof(float)) != 0;
    }
    CHECK(differ == 0);
  }
}

TEST_CASE("gelu (tanh) keeps its relative precision where tanh saturates", "[activation]") {
  // For x in [-10, -3] gelu(x) falls from -4e-3 to -1e-37; 0.5 x (1 + tanh(u)) from a rounded tanh
  // kept few digits there (relative error 2.8e-4 near x = -6). Here y = x / (1 + exp(-2u)): float's
  // -2u (up to 88) carries a few ulp, which exp turns into 88 times as much relative error of E.
  const int64_t n = 7001;
  std::vector<float> x(n), y(n);
  std::vector<double> xd(n), yd(n);
  for (int64_t i = 0; i < n; ++i) xd[i] = x[i] = -10.0f + 7.0f * static_cast<float>(i) / (n - 1);
  kc::gelu_contiguous(y.data(), x.data(), n, true);
  kc::gelu_contiguous(yd.data(), xd.data(), n, true);
  double worst = 0, worst_d = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double want = gelu_ref_sigmoid(xd[i]);
    worst = std::max(worst, std::abs(y[i] - want) / std::abs(want));
    worst_d = std::max(worst_d, std::abs(yd[i] - want) / std::abs(want));
  }
  CHECK(worst < 2e-5);
  CHECK(worst_d < 1e-13);
}

TEST_CASE("gelu (tanh) at inf, NaN and signed zeros gives PyTorch's values", "[activation]") {
  // PyTorch 2.15's gelu(x, approximate="tanh") on the CPU: inf -> inf, -inf -> nan (-inf times 0),
  // nan -> nan, -200 -> -0.0, -0.0 -> -0.0. 17 values, so the vector loop and the tail both see them.
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> base = {inf, -inf, nan, -200.0f, -0.0f, 0.0f};
  std::vector<float> x(17), y(17);
  std::vector<double> xd(17), yd(17);
  std::vector<remat::BFloat16> xb(17), yb(17);
  for (size_t i = 0; i < x.size(); ++i) xd[i] = x[i] = base[i % base.size()], xb[i] = remat::BFloat16(x[i]);
  kc::gelu_contiguous(y.data(), x.data(), 17, true);
  kc::gelu_contiguous(yd.data(), xd.data(), 17, true);
  kc::gelu_contiguous(yb.data(), xb.data(), 17, true);
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("x " << x[i]);
    for (double got : {double(y[i]), yd[i], double(float(yb[i]))}) {
      if (std::isnan(x[i]) || x[i] == -inf) {
        CHECK(std::isnan(got));
      } else {
        CHECK(got == x[i] * (x[i] > 0));  // inf, or a zero
        CHECK(std::signbit(got) == std::signbit(x[i]));
      }
    }
  }
}

TEST_CASE("gelu_backward (tanh) keeps its relative precision where tanh saturates", "[activation]") {
  // For x in [-9, -3] gelu'(x) falls from -1e-2 to -1e-27; 0.5 (1 + tanh(u)) from a rounded tanh
  // would lose every digit of its share there (0.6% of the whole at x = -5).
  const int64_t n = 6001;
  std::vector<float> x(n), g(n, 1.0f), gx(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -9.0f + 6.0f * static_cast<float>(i) / (n - 1);
  kc::gelu_backward_contiguous(gx.data(), g.data(), x.data(), n, true);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double want = gelu_tanh_grad_exact(x[i]);
    worst = std::max(worst, std::abs(gx[i] - want) / std::abs(want));
  }
  CHECK(worst < 1e-5);
}

TEST_CASE("gelu_backward scales by the incoming gradient; double runs the same code", "[activation]") {
  std::vector<double> x = {-3, -1, -0.5, 0, 0.5, 1, 3}, g = {2, 2, 2, 2, 2, 2, 2}, gx(7), y(7);
  kc::gelu_backward_contiguous(gx.data(), g.data(), x.data(), 7, false);
  kc::gelu_contiguous(y.data(), x.data(), 7, false);
  for (int i = 0; i < 7; ++i) {
    CHECK(y[i] == Approx(gelu_ref(x[i], false)).epsilon(1e-12));
    CHECK(gx[i] == Approx(2 * gelu_grad_ref(x[i], false)).epsilon(1e-7).margin(1e-9));
  }
  CHECK(gx[3] == 1.0);  // gelu'(0) = 1/2 exactly, times 2
}

TEST_CASE("gelu kernels in bfloat16 are the float kernels rounded once, tail included", "[activation]") {
  // bfloat16 runs in registers (tanh form, AVX-512) or on widened blocks: either way each element
  // is the float kernel's value rounded once, wherever it falls (a vector, the tail, a block).
  for (int64_t n : {1, 15, 16, 17, 33, 3001}) {
    std::vector<float> xf(n), yf(n), gf(n), gxf(n);
    std::vector<remat::BFloat16> x(n), g(n), y(n), gx(n);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = remat::BFloat16(-8.0f + 16.0f * static_cast<float>(i) / std::max<int64_t>(n - 1, 1));
      g[i] = remat::BFloat16(0.5f + static_cast<float>(i % 7));
      xf[i] = float(x[i]);
      gf[i] = float(g[i]);
    }
    for (bool tanh_form : {true, false}) {
      INFO("n " << n << ", tanh_form " << tanh_form);
      kc::gelu_run(yf.data(), xf.data(), n, tanh_form);
      kc::gelu_backward_run(gxf.data(), gf.data(), xf.data(), n, tanh_form);
      kc::gelu_contiguous(y.data(), x.data(), n, tanh_form);
      kc::gelu_backward_contiguous(gx.data(), g.data(), x.data(), n, tanh_form);
      for (int64_t i = 0; i < n; ++i) {
        CHECK(y[i].bits == remat::BFloat16(yf[i]).bits);
        CHECK(gx[i].bits == remat::BFloat16(gxf[i]).bits);
      }
    }
  }
}

namespace {
double silu_grad_exact(double x) {
  const double s = 1 / (1 + std::exp(-x));
  return s * (1 + x * (1 - s));
}
}  // namespace

TEST_CASE("silu_backward matches the formula in double: float, double, and bfloat16 as float rounded once",
          "[activation]") {
  // 70001 points in [-30, 30] (odd: the vector loop's tail runs), and the saturated ends.
  const int64_t n = 70001;
  std::vector<float> x(n), g(n), gx(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = -30.0f + 60.0f * static_cast<float>(i) / (n - 1);
    g[i] = 0.25f + static_cast<float>(i % 5);
  }
  x[0] = -100.0f, x[n - 1] = 100.0f;
  kc::silu_backward_contiguous(gx.data(), g.data(), x.data(), n);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i)
    worst = std::max(worst, std::abs(gx[i] - g[i] * silu_grad_exact(x[i])) / (g[i] * (1 + std::abs(x[i]))));
  // An ulp of s (6e-8) comes back times x through x (1 - s): the formula's own error, PyTorch's too
  // (the scalar std::exp code it replaces: 8.7e-8 on these points; Eigen's logistic adds an ulp or two).
  CHECK(worst < 2e-7);
  CHECK(gx[n - 1] == g[n - 1]);  // silu'(x) = 1 for large x
  CHECK(std::abs(gx[0]) < 1e-30f);

  std::vector<double> xd = {-20, -3, -1, 0, 0.5, 2, 20}, gd(7, 2.0), gxd(7);
  kc::silu_backward_contiguous(gxd.data(), gd.data(), xd.data(), 7);
  for (int i = 0; i < 7; ++i) CHECK(gxd[i] == Approx(2 * silu_grad_exact(xd[i])).epsilon(1e-13).margin(1e-300));
  CHECK(gxd[3] == 1.0);  // silu'(0) = 1/2, times 2

  const int64_t m = 3001;
  std::vector<remat::BFloat16> xb(m), gb(m), gxb(m);
  std::vector<float> xf(m), gf(m), gxf(m);
  for (int64_t i = 0; i < m; ++i) {
    xb[i] = remat::BFloat16(-8.0f + 16.0f * static_cast<float>(i) / (m - 1));
    gb[i] = remat::BFloat16(0.5f + static_cast<float>(i % 7));
    xf[i] = float(xb[i]);
    gf[i] = float(gb[i]);
  }
  kc::silu_backward_run(gxf.data(), gf.data(), xf.data(), m);
  kc::silu_backward_contiguous(gxb.data(), gb.data(), xb.data(), m);
  for (int64_t i = 0; i < m; ++i) CHECK(gxb[i].bits == remat::BFloat16(gxf[i]).bits);
}
