// Tests kernels/cpu/complex.h (ATen's complex mul_kernel and conj_kernel): the product over any
// broadcast layout, its vector runs (whole and a tail) and the strided loop, has the bits of
// complex_mul element by element, on any thread count; no C99 Annex G recovery of infinities.
#include "kernels/cpu/complex.h"

#include <omp.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <vector>

using namespace remat::kernels::cpu;

namespace {

// out [outer, rows, n] dense; a dense, or with its runs strided by 2 (a_stride); b [1, rows, n]
// broadcast over outer, or over rows too (b_rows = 1).
template <class T>
void check_layout(int64_t outer, int64_t rows, int64_t n, int64_t a_stride, bool b_rows) {
  using C = std::complex<T>;
  const int64_t numel = outer * rows * n;
  std::vector<C> a(static_cast<size_t>(numel * a_stride)), b(static_cast<size_t>(rows * n));
  for (size_t k = 0; k < a.size(); ++k) a[k] = C(T(std::sin(0.37 * double(k))), T(std::cos(0.11 * double(k)) * 3));
  for (size_t k = 0; k < b.size(); ++k) b[k] = C(T(std::cos(0.7 * double(k))), T(std::sin(0.23 * double(k))));
  LoopShape s;
  s.ndim = 3;
  s.noperands = 3;
  s.sizes = {outer, rows, n};
  s.strides[0] = {rows * n, n, 1};
  s.strides[1] = {rows * n * a_stride, n * a_stride, a_stride};
  s.strides[2] = {0, b_rows ? n : 0, 1};
  s.coalesce();
  for (int threads : {1, 2}) {
    INFO(outer << " x " << rows << " x " << n << ", a stride " << a_stride << ", b rows " << b_rows << ", " << threads
               << " thread(s)");
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    std::vector<C> out(static_cast<size_t>(numel));
    complex_mul_kernel(s, out.data(), a.data(), b.data());
    omp_set_num_threads(before);
    int64_t differ = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < n; ++i) {
          const C want = complex_mul(a[static_cast<size_t>(((o * rows + r) * n + i) * a_stride)],
                                     b[static_cast<size_t>((b_rows ? r * n : 0) + i)]);
          const C got = out[static_cast<size_t>((o * rows + r) * n + i)];
          differ += std::memcmp(&want, &got, sizeof(C)) != 0;
        }
    CHECK(differ == 0);
  }
}

}  // namespace

TEMPLATE_TEST_CASE("complex mul: every layout has complex_mul's bits element by element", "[complex]", float, double) {
  check_layout<TestType>(8, 16, 8, 1, true);     // the rotary: runs of 8, b broadcast over outer
  check_layout<TestType>(3, 5, 13, 1, true);     // a run of 13: a whole vector and a tail
  check_layout<TestType>(2, 7, 5, 1, false);     // runs shorter than a vector, b one row for all
  check_layout<TestType>(4, 3, 9, 2, true);      // a strided: the element loop
  check_layout<TestType>(1, 1, 1000, 1, true);   // one long run
}

TEST_CASE("complex mul: infinities and NaN follow the formula, as PyTorch's vectorized product", "[complex]") {
  using C = std::complex<float>;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<C> a = {C(inf, 0), C(1, 2), C(std::nanf(""), 1), C(0, 0)}, b = {C(0, 1), C(3, 4), C(1, 0), C(inf, inf)};
  std::vector<C> out(4);
  LoopShape s;
  s.ndim = 1;
  s.noperands = 3;
  s.sizes[0] = 4;
  s.strides[0][0] = s.strides[1][0] = s.strides[2][0] = 1;
  complex_mul_kernel(s, out.data(), a.data(), b.data());
  CHECK(std::isnan(out[0].real()));  // inf * 0 - 0 * 1: no Annex G recovery
  CHECK(std::isinf(out[0].imag()));
  CHECK(out[1] == C(1 * 3 - 2 * 4, 1 * 4 + 2 * 3));
  CHECK(std::isnan(out[2].real()));
  CHECK(std::isnan(out[3].real()));  // 0 * inf
}
