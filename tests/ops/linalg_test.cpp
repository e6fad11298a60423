// Mirrors test/test_linalg.py (mm).
// Tests ops/linalg.cpp: mm with every operand layout the GEMM call has to handle.
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

namespace {
// out[i][j] = sum_k a[i][k] * b[k][j], from the logical values.
std::vector<double> naive_mm(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector(), y = b.to_vector(), out;
  int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += x[i * k + p] * y[p * n + j];
      out.push_back(s);
    }
  return out;
}
}  // namespace

TEST_CASE("mm with expanded (stride 0) operands", "[linalg]") {
  // What mm's backward gets after sum(): the incoming gradient is expanded from a scalar.
  Tensor g = full({}, 2.0, kDouble).unsqueeze(0).unsqueeze(1).expand({2, 2});
  REQUIRE(g.strides() == Shape{0, 0});
  Tensor w = from_vector({1, -1, 2, 0, 0.5, 3}, {3, 2}, kDouble);
  Tensor m = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, kDouble);
  REQUIRE(mm(g, w.t()).to_vector() == naive_mm(g, w.t()));
  REQUIRE(mm(m.t(), g).to_vector() == naive_mm(m.t(), g));
  Tensor row = from_vector({1, 2, 3}, {3}, kDouble).unsqueeze(0).expand({4, 3});  // rows share memory
  REQUIRE(mm(row, w).to_vector() == naive_mm(row, w));
}

TEST_CASE("mm with size-1 dims of any stride, transposed and sliced operands", "[linalg]") {
  Tensor base = from_vector({3, 5}, {2}, kDouble);
  Tensor col = make_alias(base, {2, 1}, {1, 0}, 0);  // a column whose unused stride is 0
  Tensor ones_row = ones({1, 3}, kDouble);
  REQUIRE(mm(col, ones_row).to_vector() == std::vector<double>{3, 3, 3, 5, 5, 5});
  REQUIRE(mm(ones({3, 2}, kDouble), col).to_vector() == std::vector<double>{8, 8, 8});
  Tensor big = from_vector({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4}, kDouble);
  Tensor sliced = big.slice(1, 0, 4, 2);  // [3, 2], strides [4, 2]: needs a copy
  Tensor rhs = from_vector({1, 2, 3, 4}, {2, 2}, kDouble);
  REQUIRE(mm(sliced, rhs).to_vector() == naive_mm(sliced, rhs));
  Tensor v = from_vector({1, 0, -1}, {3, 1}, kDouble);
  REQUIRE(mm(big.t(), v).to_vector() == naive_mm(big.t(), v));
}

TEST_CASE("mm with an expanded operand in every floating dtype", "[linalg]") {
  Tensor w = from_vector({1, -1, 2, 0, 0.5, 3}, {3, 2}, kDouble);
  Tensor g = full({}, 2.0, kDouble).unsqueeze(0).unsqueeze(1).expand({2, 2});
  const std::vector<double> expected = naive_mm(g, w.t());  // small multiples of 0.5: exact in every dtype
  for (ScalarType t : {kFloat, kBFloat16, kHalf}) {
    INFO(toString(t));
    Tensor gt = full({}, 2.0, t).unsqueeze(0).unsqueeze(1).expand({2, 2});
    REQUIRE(mm(gt, w.to(t).t()).to_vector() == expected);
  }
}
