// Tests ops/cuda/reduction.cpp: sum, mean and amax on CUDA against the CPU over every kind of
// dim set (rows, columns, the middle of a tensor, non-adjacent dims, all dims, long rows split
// into chunks), forward and backward, on rows of 1, about 32, about 1024 and 4097 elements,
// strided, broadcast and empty inputs, in every floating dtype; determinism and gradcheck.
#include <catch2/catch.hpp>

#include <limits>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/cuda_op_check.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("sum, mean and amax on CUDA match the CPU for every dim set", "[reduction][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const std::vector<Shape> dim_sets = {{}, {0}, {1}, {2}, {3}, {0, 1}, {1, 2}, {0, 2}, {1, 3}, {0, 1, 2, 3}, {-1}};
  uint64_t seed = 1;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf}) {
    Tensor x = random_cpu({5, 6, 7, 8}, dt, ++seed);
    Tensor gx = x.to(cuda0());
    for (const Shape& dims : dim_sets) {
      for (bool keepdim : {false, true}) {
        INFO(toString(dt) << " dims " << str(dims) << " keepdim " << keepdim);
        CHECK(compare(sum(gx, dims, keepdim), sum(x, dims, keepdim), reduction_tolerance(dt)) == "");
        CHECK(compare(mean(gx, dims, keepdim), mean(x, dims, keepdim), reduction_tolerance(dt)) == "");
      }
    }
    for (int64_t d = 0; d < 4; ++d) {
      INFO(toString(dt) << " amax dim " << d);
      CHECK(equal(amax(gx, d).to(Device(kCPU)), amax(x, d)));  // a max is exact
      CHECK(equal(amax(gx, d, true).to(Device(kCPU)), amax(x, d, true)));
    }
    // A non-contiguous input (transposed).
    Tensor t = x.transpose(1, 3), gt = gx.transpose(1, 3);
    CHECK(compare(sum(gt, {1, 2}), sum(t, {1, 2}), reduction_tolerance(dt)) == "");
  }
}

TEST_CASE("long reductions are split into chunks and combined in order", "[reduction][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // One long row (split), few long rows, and a long column reduction (split along the rows).
  // Positive inputs: a sum far from zero, so a relative tolerance means something.
  Tensor a = random_cpu({3 << 20}, kFloat, 5, 0.5, 1.5);
  Tensor ga = a.to(cuda0());
  CHECK(compare(sum(ga), sum(a.to(kDouble)).to(kFloat), kF32Reduction) == "");
  CHECK(compare(mean(ga), mean(a.to(kDouble)).to(kFloat), kF32Reduction) == "");
  CHECK(equal(amax(ga, 0).to(Device(kCPU)), amax(a, 0)));
  Tensor b = random_cpu({3, 200000}, kFloat, 6, 0.5, 1.5);
  CHECK(compare(sum(b.to(cuda0()), {1}), sum(b.to(kDouble), {1}).to(kFloat), kF32Reduction) == "");
  Tensor c = random_cpu({8192, 96}, kFloat, 7, 0.5, 1.5);
  CHECK(compare(sum(c.to(cuda0()), {0}), sum(c.to(kDouble), {0}).to(kFloat), kF32Reduction) == "");
  Tensor h = random_cpu({1 << 21}, kBFloat16, 8, 0.5, 1.5);
  CHECK(compare(sum(h.to(cuda0())), sum(h.to(kDouble)).to(kBFloat16), kBF16) == "");
}

TEST_CASE("CUDA reductions are deterministic", "[reduction][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = random_cpu({1 << 22}, kFloat, 9).to(cuda0());
  Tensor y = random_cpu({4096, 300}, kFloat, 10).to(cuda0());
  CHECK(equal(sum(x), sum(x)));
  CHECK(equal(sum(y, {0}), sum(y, {0})));
}

TEST_CASE("Long and Bool sums, NaN in amax, empty inputs", "[reduction][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor l = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, kLong);
  CHECK(equal(sum(l.to(cuda0()), {1}).to(Device(kCPU)), sum(l, {1})));
  Tensor b = from_vector({1, 0, 1, 1}, {4}, kBool);
  Tensor sb = sum(b.to(cuda0()));
  CHECK(sb.dtype() == kLong);
  CHECK(sb.item() == 3.0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor n = from_vector({1, nan, 3, 4, 5, 6}, {2, 3}, kFloat);
  std::vector<double> m = amax(n.to(cuda0()), 1).to_vector();
  CHECK(std::isnan(m[0]));
  CHECK(m[1] == 6.0);
  Tensor e = zeros({0, 3}, TensorOptions().device(cuda0()));
  CHECK(equal(sum(e, {0}).to(Device(kCPU)), zeros({3})));
  std::vector<double> empty_mean = mean(e, {0}).to_vector();  // 0/0, as on CPU
  CHECK(std::isnan(empty_mean[0]));
  REQUIRE_THROWS_WITH(amax(e, 0), Catch::Contains("Expected reduction dim 0 to have non-zero size"));
  REQUIRE_THROWS_WITH(mean(l.to(cuda0())), Catch::Contains("aten::mean: expected 'self' to have a floating point"));
  REQUIRE_THROWS_WITH(sum(l.to(cuda0()), {0, 0}), Catch::Contains("appears multiple times"));
}

TEST_CASE("gradcheck in float64 on CUDA for sum, mean and amax", "[reduction][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = random_cpu({3, 4, 2}, kDouble, 41).to(cuda0()).requires_grad_();
  auto check = [&](std::function<Tensor(const Tensor&)> f) {
    return autograd::gradcheck([f](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in[0])}; }, {x});
  };
  CHECK(check([](const Tensor& a) { return sum(a); }));
  CHECK(check([](const Tensor& a) { return sum(a, {0, 2}); }));
  CHECK(check([](const Tensor& a) { return mean(a, {1}, true); }));
  CHECK(check([](const Tensor& a) { return amax(a, 1); }));
}

TEST_CASE("sum, mean and amax on CUDA match the CPU, forward and backward, on every row length and layout",
          "[reduction][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::vector<Shape> shapes = row_shapes();
  for (const Shape& s : element_shapes())
    if (s.size() == 1) shapes.push_back(s);
  const std::vector<Case> cs = cases(floating_types(), shapes);
  auto one = [](const Case& c) { return std::vector<Arg>{arg(c.shape).in(c.layout)}; };
  // amax of an empty input throws even where the reduced dim is not empty (ops/reduction.cpp's
  // check_amax_nonempty; PyTorch returns an empty result there), on both devices alike.
  auto nonempty = [](const std::vector<Case>& v) {
    std::vector<Case> out;
    for (const Case& c : v) {
      int64_t n = 1;
      for (int64_t d : c.shape) n *= d;
      if (n > 0) out.push_back(c);
    }
    return out;
  };
  // Over the last dim (row kernels), the first dim (column kernels), all dims; keepdim both ways.
  for (bool keepdim : {false, true}) {
    for (int64_t dim : {int64_t{-1}, int64_t{0}}) {
      const std::string d = " dim " + std::to_string(dim) + (keepdim ? " keepdim" : "");
      check_cases(("sum" + d).c_str(), [=](const std::vector<Tensor>& in) { return sum(in[0], {dim}, keepdim); }, cs,
                  one, Kind::Reduction);
      check_cases(("mean" + d).c_str(), [=](const std::vector<Tensor>& in) { return mean(in[0], {dim}, keepdim); }, cs,
                  one, Kind::Reduction);
      check_cases(("amax" + d).c_str(), [=](const std::vector<Tensor>& in) { return amax(in[0], dim, keepdim); },
                  nonempty(cs), one, Kind::Reduction);
    }
  }
  check_cases(
      "sum of all", [](const std::vector<Tensor>& in) { return sum(in[0]); }, cs, one, Kind::Reduction);
  check_cases(
      "mean of all", [](const std::vector<Tensor>& in) { return mean(in[0]); }, cs, one, Kind::Reduction);
  // A 3-d input over the middle dim, and over non-adjacent dims (a permuted copy first).
  const std::vector<Case> cs3 = cases(floating_types(), {{5, 33, 7}, {3, 1025, 2}, {2, 0, 3}});
  check_cases(
      "sum dim 1", [](const std::vector<Tensor>& in) { return sum(in[0], {1}); }, cs3, one, Kind::Reduction);
  check_cases(
      "mean dims 0, 2", [](const std::vector<Tensor>& in) { return mean(in[0], {0, 2}, true); }, cs3, one,
      Kind::Reduction);
  // Few long rows (split into chunks, combined by a second row pass) and a long column
  // reduction over few outputs (split along it, combined by a second column pass).
  const std::vector<Case> split_rows = cases(floating_types(), {{3, 70000}}, {Layout::Contiguous, Layout::Offset});
  check_cases(
      "sum dim 1, split", [](const std::vector<Tensor>& in) { return sum(in[0], {1}); }, split_rows, one,
      Kind::Reduction);
  check_cases(
      "amax dim 1, split", [](const std::vector<Tensor>& in) { return amax(in[0], 1); }, split_rows, one,
      Kind::Reduction);
  const std::vector<Case> split_cols = cases(floating_types(), {{4500, 5}}, {Layout::Contiguous, Layout::Transposed});
  check_cases(
      "mean dim 0, split", [](const std::vector<Tensor>& in) { return mean(in[0], {0}); }, split_cols, one,
      Kind::Reduction);
  check_cases(
      "amax dim 0, split", [](const std::vector<Tensor>& in) { return amax(in[0], 0); }, split_cols, one,
      Kind::Reduction);
}
