// Tests kernels/cpu/softmax.h (ATen/native/cpu/SoftMaxKernel.cpp): float and bfloat16 softmax
// backward, plain and masked, follows dx = y * (dy - sum(dy * y)) (0 where masked) at row lengths
// with and without whole 16-lane vectors, the same bits on any thread count.
#include "kernels/cpu/softmax.h"

#include <catch2/catch.hpp>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace cpu = remat::kernels::cpu;
using remat::BFloat16;

namespace {

template <class T>
struct Rows {
  int64_t rows, len;
  std::vector<T> dy, y;
  std::unique_ptr<bool[]> mask;
  Rows(int64_t r, int64_t n) : rows(r), len(n), dy(r * n), y(r * n), mask(new bool[n * n]) {
    for (int64_t k = 0; k < r * n; ++k) {
      dy[k] = T(std::sin(0.31f * float(k)));
      y[k] = T(0.5f + 0.5f * std::cos(0.17f * float(k)));
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) mask[i * n + j] = j > i;  // causal [n, n], one row per row mod n
  }
  std::vector<T> backward(bool masked, int threads) const {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    std::vector<T> dx(dy.size());
    if (masked)
      cpu::masked_softmax_backward(dx.data(), dy.data(), y.data(), mask.get(), rows, len, len);
    else
      cpu::softmax_backward(dx.data(), dy.data(), y.data(), rows, len, 1, false);
    omp_set_num_threads(before);
    return dx;
  }
};

// rel: the result's own rounding (bf16: 2^-8; float: a few ulp of the dot and the product).
template <class T>
void check_backward(double rel, double abs_per_dot) {
  for (int64_t len : {int64_t(5), int64_t(16), int64_t(77), int64_t(128)}) {
    const Rows<T> r(600, len);  // more rows than one thread's grain
    for (bool masked : {false, true}) {
      INFO("len " << len << ", masked " << masked);
      const std::vector<T> one = r.backward(masked, 1), two = r.backward(masked, 2);
      CHECK(std::memcmp(one.data(), two.data(), one.size() * sizeof(T)) == 0);
      int64_t wrong = 0;
      for (int64_t i = 0; i < r.rows; ++i) {
        const bool* m = r.mask.get() + (i % len) * len;
        double dot = 0;
        for (int64_t k = 0; k < len; ++k) dot += double(float(r.dy[i * len + k])) * double(float(r.y[i * len + k]));
        for (int64_t k = 0; k < len; ++k) {
          const double want = masked && m[k] ? 0.0 : double(float(r.y[i * len + k])) * (double(float(r.dy[i * len + k])) - dot);
          const double got = float(one[i * len + k]);
          if (masked && m[k] ? got != 0.0 : std::abs(got - want) > rel * std::abs(want) + abs_per_dot * (1 + std::abs(dot)))
            ++wrong;
        }
      }
      CHECK(wrong == 0);
    }
  }
}

}  // namespace

TEST_CASE("bfloat16 softmax backward, plain and masked: the formula, the same bits on any thread count",
          "[softmax][bf16]") {
  check_backward<BFloat16>(8e-3, 1e-5);
}

TEST_CASE("float softmax backward, plain and masked: the formula, the same bits on any thread count", "[softmax]") {
  check_backward<float>(1e-6, 1e-6);
}

namespace {

// Softmax forward over rows of len (last dim) on `threads` threads.
template <class T>
std::vector<T> softmax_rows(const std::vector<T>& x, int64_t len, int threads) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  std::vector<T> y(x.size());
  cpu::softmax_forward(y.data(), x.data(), static_cast<int64_t>(x.size()) / len, len, 1, false);
  omp_set_num_threads(before);
  return y;
}

}  // namespace

TEST_CASE("softmax forward over the last dim, float and bfloat16: the formula in double, the same bits on any "
          "thread count, bfloat16 the float result rounded once",
          "[softmax][bf16]") {
  for (int64_t len : {int64_t(1), int64_t(5), int64_t(16), int64_t(17), int64_t(77), int64_t(128)}) {
    INFO("len " << len);
    const int64_t rows = 600;  // more rows than one thread's grain
    std::vector<float> xf(rows * len);
    std::vector<BFloat16> xb(xf.size());
    for (size_t k = 0; k < xf.size(); ++k) {
      xb[k] = BFloat16(8.0f * std::sin(0.37f * float(k)));
      xf[k] = float(xb[k]);  // the same values in both types
    }
    const std::vector<float> yf = softmax_rows(xf, len, 1), yf2 = softmax_rows(xf, len, 2);
    const std::vector<BFloat16> yb = softmax_rows(xb, len, 1), yb2 = softmax_rows(xb, len, 2);
    CHECK(std::memcmp(yf.data(), yf2.data(), yf.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(yb.data(), yb2.data(), yb.size() * sizeof(BFloat16)) == 0);
    int64_t wrong = 0, not_rounded_once = 0;
    for (int64_t i = 0; i < rows; ++i) {
      double max = -INFINITY, sum = 0;
      for (int64_t k = 0; k < len; ++k) max = std::max(max, double(xf[i * len + k]));
      for (int64_t k = 0; k < len; ++k) sum += std::exp(double(xf[i * len + k]) - max);
      for (int64_t k = 0; k < len; ++k) {
        const double want = std::exp(double(xf[i * len + k]) - max) / sum;
        if (std::abs(yf[i * len + k] - want) > 1e-6 * want + 1e-12) ++wrong;  // a few ulp of exp and the sum
        if (yb[i * len + k].bits != BFloat16(yf[i * len + k]).bits) ++not_rounded_once;
      }
    }
    CHECK(wrong == 0);
    CHECK(not_rounded_once == 0);
  }
}

TEST_CASE("softmax forward: -inf scores give 0, a NaN makes its row NaN, a row of -inf is NaN (as PyTorch's)",
          "[softmax]") {
  const float inf = INFINITY;
  // three rows of 20 (a whole vector and a tail)
  std::vector<float> x(60, 1.0f);
  for (int k = 10; k < 20; ++k) x[k] = -inf;  // row 0: half masked
  x[20 + 17] = NAN;                           // row 1: one NaN, in the tail
  for (int k = 40; k < 60; ++k) x[k] = -inf;  // row 2: all -inf
  const std::vector<float> y = softmax_rows(x, 20, 1);
  for (int k = 0; k < 10; ++k) CHECK(y[k] == Approx(0.1f));
  for (int k = 10; k < 20; ++k) CHECK(y[k] == 0.0f);
  for (int k = 20; k < 60; ++k) CHECK(std::isnan(y[k]));
}

TEST_CASE("softmax forward of causal rows (whole vectors of -inf skipped): the formula, 0 where masked; rows of "
          "whole vectors that are all -inf, or -inf and one NaN, are NaN",
          "[softmax]") {
  const float inf = INFINITY;
  const int64_t len = 128;  // attention's rows: 8 vectors, no tail
  std::vector<float> x(len * len);
  for (int64_t i = 0; i < len; ++i)
    for (int64_t k = 0; k < len; ++k) x[i * len + k] = k <= i ? 4.0f * std::sin(0.37f * float(i * len + k)) : -inf;
  const std::vector<float> y = softmax_rows(x, len, 1);
  int64_t wrong = 0;
  for (int64_t i = 0; i < len; ++i) {
    double max = -INFINITY, sum = 0;
    for (int64_t k = 0; k <= i; ++k) max = std::max(max, double(x[i * len + k]));
    for (int64_t k = 0; k <= i; ++k) sum += std::exp(double(x[i * len + k]) - max);
    for (int64_t k = 0; k < len; ++k) {
      const double want = k <= i ? std::exp(double(x[i * len + k]) - max) / sum : 0.0;
      if (!(std::abs(y[i * len + k] - want) <= 1e-6 * want + 1e-12)) ++wrong;
    }
  }
  CHECK(wrong == 0);
  std::vector<float> dead(3 * 32, -inf);  // rows of 32: two whole vectors each, no tail
  dead[32 + 5] = NAN;                     // row 1: -inf but one NaN
  dead[64 + 20] = 0.0f;                   // row 2: one live score in its second vector
  const std::vector<float> z = softmax_rows(dead, 32, 1);
  for (int k = 0; k < 64; ++k) CHECK(std::isnan(z[k]));
  for (int k = 64; k < 96; ++k) CHECK(z[k] == (k == 84 ? 1.0f : 0.0f));
}
