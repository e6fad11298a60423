// Tests kernels/cpu/reduce.h (ATen/native/cpu/SumKernel.cpp): bfloat16 reductions accumulate in
// float on widened blocks (rows, whole tensors and column sums) and match double sums.
#include <catch2/catch.hpp>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/reduce.h"

namespace cpu = remat::kernels::cpu;
using remat::BFloat16;

namespace {

// [rows, cols] row-major, reduced over `dim` (0: column sums, 1: row sums).
cpu::ReduceShape reduce_dim(int64_t rows, int64_t cols, int dim) {
  cpu::ReduceShape s;
  if (dim == 1) {
    s.kept_sizes = {rows}, s.kept_in_strides = {cols}, s.kept_out_strides = {1};
    s.red_sizes = {cols}, s.red_strides = {1};
  } else {
    s.kept_sizes = {cols}, s.kept_in_strides = {1}, s.kept_out_strides = {1};
    s.red_sizes = {rows}, s.red_strides = {cols};
  }
  return s;
}

}  // namespace

TEST_CASE("bfloat16 sums over rows, columns and everything match double sums", "[reduce]") {
  const int64_t rows = 37, cols = 2500;  // a row spans three widened blocks
  std::vector<BFloat16> x(rows * cols);
  for (int64_t k = 0; k < rows * cols; ++k) x[k] = BFloat16(std::sin(0.013f * k) + 0.25f);
  auto at = [&](int64_t i, int64_t j) { return double(float(x[i * cols + j])); };
  std::vector<BFloat16> row_sums(rows), col_sums(cols), all(1);
  cpu::reduce_kernel<cpu::SumReducer>(reduce_dim(rows, cols, 1), row_sums.data(), x.data(), 1.0);
  cpu::reduce_kernel<cpu::SumReducer>(reduce_dim(rows, cols, 0), col_sums.data(), x.data(), 1.0);
  cpu::ReduceShape whole;
  whole.red_sizes = {rows * cols};
  whole.red_strides = {1};
  cpu::reduce_kernel<cpu::SumReducer>(whole, all.data(), x.data(), 1.0);
  double total = 0;
  for (int64_t i = 0; i < rows; ++i) {
    double s = 0;
    for (int64_t j = 0; j < cols; ++j) s += at(i, j);
    total += s;
    CHECK(float(row_sums[i]) == Approx(s).epsilon(8e-3));  // bf16's own rounding of the result
  }
  for (int64_t j = 0; j < cols; j += 97) {
    double s = 0;
    for (int64_t i = 0; i < rows; ++i) s += at(i, j);
    CHECK(float(col_sums[j]) == Approx(s).epsilon(8e-3).margin(1e-2));
  }
  CHECK(float(all[0]) == Approx(total).epsilon(8e-3));
}

TEST_CASE("a bfloat16 max over a row sees every widened block, and NaN wins", "[reduce]") {
  const int64_t n = 3000;
  std::vector<BFloat16> x(n, BFloat16(1.0f));
  x[2900] = BFloat16(7.0f);
  std::vector<BFloat16> out(1);
  cpu::reduce_kernel<cpu::MaxReducer>(reduce_dim(1, n, 1), out.data(), x.data(), 1.0);
  CHECK(float(out[0]) == 7.0f);
  x[1500] = BFloat16(std::numeric_limits<float>::quiet_NaN());
  cpu::reduce_kernel<cpu::MaxReducer>(reduce_dim(1, n, 1), out.data(), x.data(), 1.0);
  CHECK(std::isnan(float(out[0])));
}

namespace {

// Column sums of [rows, cols] in the kernel's order: each column summed over the rows in order,
// in float (what the AVX-512 path and the portable loop must both give, bit for bit).
template <class T>
std::vector<float> sequential_column_sums(const std::vector<T>& x, int64_t rows, int64_t cols) {
  std::vector<float> s(static_cast<size_t>(cols), 0.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) s[j] += float(x[i * cols + j]);
  return s;
}

template <class T>
std::vector<T> column_sums(const std::vector<T>& x, int64_t rows, int64_t cols, int threads) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  std::vector<T> out(static_cast<size_t>(cols));
  cpu::reduce_kernel<cpu::SumReducer>(reduce_dim(rows, cols, 0), out.data(), x.data(), 1.0);
  omp_set_num_threads(before);
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("column sums (a bias gradient) are the rows summed in order, on any thread count", "[reduce]",
                   float, BFloat16) {
  // widths with 32-column vectors, a 16-column one and a scalar tail; row counts with and
  // without a partial group of kColumnRows rows
  for (int64_t cols : {int64_t(3), int64_t(17), int64_t(77), int64_t(1024), int64_t(4133)}) {
    for (int64_t rows : {int64_t(2), int64_t(8), int64_t(29), int64_t(300)}) {
      std::vector<TestType> x(static_cast<size_t>(rows * cols));
      for (int64_t k = 0; k < rows * cols; ++k) x[k] = TestType(std::sin(0.37f * float(k)) * 3.0f + 0.5f);
      const std::vector<float> want = sequential_column_sums(x, rows, cols);
      const std::vector<TestType> one = column_sums(x, rows, cols, 1), two = column_sums(x, rows, cols, 2);
      for (int64_t j = 0; j < cols; ++j) {
        INFO("rows " << rows << " cols " << cols << " column " << j);
        CHECK(float(one[j]) == float(TestType(want[j])));
        CHECK(float(two[j]) == float(one[j]));
        double ref = 0;
        for (int64_t i = 0; i < rows; ++i) ref += double(float(x[i * cols + j]));
        CHECK(float(one[j]) == Approx(ref).epsilon(std::is_same_v<TestType, float> ? 1e-5 : 8e-3).margin(1e-3 * rows));
      }
    }
  }
}

TEST_CASE("column sums over two reduced dims and a kept outer dim walk the rows in order", "[reduce]") {
  // x[a, b, c] summed over a and c... here: x [4, 6, 40] summed over dims 0 and 1, kept dim 2
  const int64_t A = 4, B = 6, C = 40;
  std::vector<float> x(static_cast<size_t>(A * B * C));
  for (int64_t k = 0; k < A * B * C; ++k) x[k] = std::cos(0.11f * float(k)) * 7.0f;
  cpu::ReduceShape s;
  s.kept_sizes = {C}, s.kept_in_strides = {1}, s.kept_out_strides = {1};
  s.red_sizes = {A, B}, s.red_strides = {B * C, C};
  std::vector<float> out(static_cast<size_t>(C));
  cpu::reduce_kernel<cpu::SumReducer>(s, out.data(), x.data(), 0.5);
  const std::vector<float> want = sequential_column_sums(x, A * B, C);
  for (int64_t j = 0; j < C; ++j) CHECK(out[j] == want[j] * 0.5f);
}

TEST_CASE("a column max keeps NaN and sees every row", "[reduce]") {
  const int64_t rows = 21, cols = 50;
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (int64_t k = 0; k < rows * cols; ++k) x[k] = float(k % 13) - 6.0f;
  x[20 * cols + 3] = 100.0f;                                      // in the last, partial group
  x[9 * cols + 4] = std::numeric_limits<float>::quiet_NaN();    // in a whole group
  std::vector<float> out(static_cast<size_t>(cols));
  cpu::reduce_kernel<cpu::MaxReducer>(reduce_dim(rows, cols, 0), out.data(), x.data(), 1.0);
  CHECK(out[3] == 100.0f);
  CHECK(std::isnan(out[4]));
  for (int64_t j = 5; j < cols; ++j) {
    float m = -1e30f;
    for (int64_t i = 0; i < rows; ++i) m = std::max(m, x[i * cols + j]);
    CHECK(out[j] == m);
  }
}

TEMPLATE_TEST_CASE("the hand-vectorised column strip equals the portable loop, bit for bit", "[reduce]", float,
                   BFloat16) {
  // column_rows_dispatch (AVX-512 where compiled in) against column_rows (the portable loop every
  // other build runs), for 8 rows and for 1, over widths with vector bodies and scalar tails
  for (int64_t n : {int64_t(1), int64_t(15), int64_t(16), int64_t(33), int64_t(100), int64_t(1031)}) {
    std::vector<TestType> x(static_cast<size_t>(8 * n));
    for (int64_t k = 0; k < 8 * n; ++k) x[k] = TestType(std::cos(1.3f * float(k)) * 1e3f + 1e-3f * float(k));
    const TestType* rows[8];
    for (int j = 0; j < 8; ++j) rows[j] = x.data() + j * n;
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    for (int64_t c = 0; c < n; ++c) a[c] = b[c] = 0.25f * float(c);
    cpu::column_rows_dispatch<cpu::SumReducer, 8>(a.data(), rows, n);
    cpu::column_rows<cpu::SumReducer, 8>(b.data(), rows, n);
    cpu::column_rows_dispatch<cpu::SumReducer, 1>(a.data(), rows + 3, n);
    cpu::column_rows<cpu::SumReducer, 1>(b.data(), rows + 3, n);
    int64_t wrong = 0;
    for (int64_t c = 0; c < n; ++c) wrong += std::memcmp(&a[c], &b[c], sizeof(float)) != 0;
    INFO("n " << n);
    CHECK(wrong == 0);
  }
}

namespace {

// sum(x) of x seen as [rows, cols] (two reduced dims, one contiguous run) on `threads` threads.
template <class T>
T sum_all(const std::vector<T>& x, int64_t rows, int64_t cols, int threads, double scale = 1.0) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  cpu::ReduceShape s;
  s.red_sizes = {rows, cols}, s.red_strides = {cols, 1};
  std::vector<T> out(1);
  cpu::reduce_kernel<cpu::SumReducer>(s, out.data(), x.data(), scale);
  omp_set_num_threads(before);
  return out[0];
}

}  // namespace

TEMPLATE_TEST_CASE("a whole-tensor sum runs in fixed chunks: the same bits on any thread count and shape", "[reduce]",
                   float, BFloat16) {
  // several chunks of kSumChunk elements and a partial one, with a tail that is no whole vector
  const int64_t rows = 7, cols = (3 * cpu::kSumChunk + 4001) / 7;
  std::vector<TestType> x(static_cast<size_t>(rows * cols));
  double ref = 0;
  for (int64_t k = 0; k < rows * cols; ++k) {
    x[k] = TestType(std::sin(0.0123f * float(k)) * 2.0f + 0.125f);
    ref += double(float(x[k]));
  }
  const TestType one = sum_all(x, rows, cols, 1), two = sum_all(x, rows, cols, 2);
  CHECK(float(two) == float(one));
  CHECK(float(sum_all(x, 1, rows * cols, 2)) == float(one));  // one reduced dim, the same run
  CHECK(float(sum_all(x, rows * cols, 1, 2)) == float(one));
  CHECK(float(one) == Approx(ref).epsilon(std::is_same_v<TestType, float> ? 1e-5 : 8e-3));
  // the mean: the same sum, scaled once
  CHECK(float(sum_all(x, rows, cols, 2, 0.5)) == float(TestType(float(one) * 0.5f)));
  // a short run (one chunk, a tail only) sums every element
  std::vector<TestType> few = {TestType(1.0f), TestType(2.0f), TestType(4.0f)};
  CHECK(float(sum_all(few, 1, 3, 2)) == 7.0f);
}

TEMPLATE_TEST_CASE("a whole chunk (four streams for float) sums every element once", "[reduce]", float, BFloat16) {
  // integers whose partial sums are all exact in float: an element read twice or missed shows
  auto exact_sum = [](int64_t n) {
    int64_t s = 0;
    for (int64_t k = 0; k < n; ++k) s += k % 61;
    return float(TestType(float(s)));  // summed exactly in float, rounded once to TestType
  };
  const int64_t n = 2 * cpu::kSumChunk + 100;  // two whole chunks and a short one
  std::vector<TestType> x(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) x[static_cast<size_t>(k)] = TestType(float(k % 61));
  CHECK(float(sum_all(x, 1, cpu::kSumChunk, 2)) == exact_sum(cpu::kSumChunk));
  CHECK(float(sum_all(x, 1, n, 1)) == exact_sum(n));
  CHECK(float(sum_all(x, 1, n, 2)) == exact_sum(n));
}

#if defined(__AVX512F__)
TEMPLATE_TEST_CASE("row sums have each row's bits of its own run, on any thread count", "[reduce]", float, BFloat16) {
  const int64_t rows = 19, cols = 1013;  // rows split between threads unevenly; a tail in each row
  std::vector<TestType> x(static_cast<size_t>(rows * cols));
  for (size_t k = 0; k < x.size(); ++k) x[k] = TestType(std::sin(0.37f * float(k)) * 3.0f);
  cpu::ReduceShape s;
  s.kept_sizes = {rows}, s.kept_in_strides = {cols}, s.kept_out_strides = {1};
  s.red_sizes = {cols}, s.red_strides = {1};
  const int before = omp_get_max_threads();
  for (int threads : {1, 2}) {
    INFO(threads << " thread(s)");
    omp_set_num_threads(threads);
    std::vector<TestType> out(static_cast<size_t>(rows));
    cpu::reduce_kernel<cpu::SumReducer>(s, out.data(), x.data(), 1.0);
    for (int64_t r = 0; r < rows; ++r) {
      INFO("row " << r);
      CHECK(float(out[r]) == float(TestType(cpu::sum_run_avx512(x.data() + r * cols, cols))));
      double ref = 0;
      for (int64_t c = 0; c < cols; ++c) ref += double(float(x[r * cols + c]));
      CHECK(float(out[r]) == Approx(ref).margin(std::is_same_v<TestType, float> ? 1e-3 : 0.5));
    }
  }
  omp_set_num_threads(before);
}
#endif

#if defined(__AVX512F__)
TEST_CASE("both float run loops (256-bit, and 512-bit where float_sums_read_512_bits) sum a run with a tail as "
          "double does, whichever this CPU takes",
          "[reduce]") {
  for (int64_t n : {1, 15, 16, 17, 63, 64, 65, 1013, 4096}) {
    INFO("n = " << n);
    std::vector<float> x(static_cast<size_t>(n));
    double ref = 0;
    for (int64_t k = 0; k < n; ++k) ref += double(x[size_t(k)] = std::sin(0.37f * float(k)) * 3.0f);
    const float* p = x.data();
    float narrow = 0, wide = 0;
    cpu::sum_runs_f32<1>(&p, n, &narrow);
    cpu::sum_runs_avx512<1>(&p, n, &wide);
    CHECK(narrow == Approx(ref).margin(1e-4));
    CHECK(wide == Approx(ref).margin(1e-4));
    CHECK(cpu::sum_run_avx512(p, n) == (cpu::float_sums_read_512_bits() ? wide : narrow));
  }
}
#endif
