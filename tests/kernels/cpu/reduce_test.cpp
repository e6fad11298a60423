// Tests kernels/cpu/reduce.h (ATen/native/cpu/SumKernel.cpp): bfloat16 reductions accumulate in
// float on widened blocks (rows, whole tensors and column sums) and match double sums.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
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
