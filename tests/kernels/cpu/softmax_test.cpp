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
