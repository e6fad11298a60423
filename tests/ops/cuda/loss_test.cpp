// Tests ops/cuda/loss.cpp: the fused cross_entropy on CUDA (mean over rows of logsumexp minus
// the target logit) and its backward against a float64 host reference and against the CPU op
// (forward and backward through autograd) on 1, about 32, about 1024 and 4097 classes, strided,
// broadcast and empty logits, every floating dtype; bad targets throw.
#include <catch2/catch.hpp>

#include <cmath>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/cuda_op_check.h"

using namespace remat;
using namespace remat::testing;

namespace {

// loss and d loss / d logits (for a unit upstream gradient g).
std::pair<double, std::vector<double>> ce_ref(const std::vector<double>& x, const std::vector<double>& t, int64_t n,
                                              int64_t c, double g) {
  double loss = 0;
  std::vector<double> dx(x.size());
  for (int64_t i = 0; i < n; ++i) {
    const double* row = &x[static_cast<size_t>(i * c)];
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < c; ++j) m = std::max(m, row[j]);
    for (int64_t j = 0; j < c; ++j) s += std::exp(row[j] - m);
    const int64_t ti = static_cast<int64_t>(t[static_cast<size_t>(i)]);
    loss += m + std::log(s) - row[ti];
    for (int64_t j = 0; j < c; ++j)
      dx[static_cast<size_t>(i * c + j)] = g / static_cast<double>(n) * (std::exp(row[j] - m) / s - (j == ti ? 1 : 0));
  }
  return {loss / static_cast<double>(n), dx};
}

}  // namespace

TEST_CASE("cross_entropy and its backward on CUDA match a float64 reference", "[loss][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  uint64_t seed = 1;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    for (auto [n, c] : {std::pair<int64_t, int64_t>{64, 10}, {32, 1000}, {8, 50257}, {1, 3}}) {
      Tensor x = mul(random_cpu({n, c}, kDouble, ++seed), 2.0).to(dt);
      Tensor u = empty({n}, kDouble);
      Generator gen(++seed);
      uniform_(u, 0.0, static_cast<double>(c), &gen);
      std::vector<double> tv = u.to_vector();
      for (double& v : tv) v = std::floor(v);
      Tensor t = from_vector(tv, {n}, kLong);
      auto [loss, dx] = ce_ref(x.to_vector(), tv, n, c, 1.5);
      Tensor l = cross_entropy(x.to(cuda0()), t.to(cuda0()));
      INFO(toString(dt) << " " << n << "x" << c);
      CHECK(l.dim() == 0);
      CHECK(l.dtype() == dt);
      CHECK(compare(l.to_vector(), {loss}, reduction_tolerance(dt)) == "");
      Tensor g = full({}, 1.5, TensorOptions().dtype(dt).device(cuda0()));
      Tensor d = cross_entropy_backward(g, x.to(cuda0()), t.to(cuda0()));
      CHECK(compare(d.to_vector(), dx, reduction_tolerance(dt)) == "");
    }
  }
  // Against the CPU kernel too.
  Tensor x = random_cpu({16, 40}, kFloat, 77);
  Tensor t = from_vector({0, 5, 39, 7, 7, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 12}, {16}, kLong);
  CHECK(compare(cross_entropy(x.to(cuda0()), t.to(cuda0())), cross_entropy(x, t), kF32Reduction) == "");
  Tensor g = full({}, 0.5);
  CHECK(compare(cross_entropy_backward(g.to(cuda0()), x.to(cuda0()), t.to(cuda0())), cross_entropy_backward(g, x, t),
                kF32Reduction) == "");
}

TEST_CASE("cross_entropy errors on CUDA", "[loss][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  auto opt = TensorOptions().device(cuda0());
  Tensor x = zeros({2, 4}, opt);
  REQUIRE_THROWS_WITH(cross_entropy(x, from_vector({1, 4}, {2}, kLong).to(cuda0())),
                      Catch::Contains("Target 4 is out of bounds (at position 1; classes are 0 to 3)"));
  REQUIRE_THROWS_WITH(cross_entropy(x, from_vector({1, 2, 3}, {3}, kLong).to(cuda0())),
                      Catch::Contains("Expected input batch_size (2) to match target batch_size (3)"));
  REQUIRE_THROWS_WITH(cross_entropy(x, zeros({2}, opt)), Catch::Contains("expected scalar type Long but found Float"));
  REQUIRE_THROWS_WITH(cross_entropy_backward(full({}, 1.0, opt), x, from_vector({-2, 0}, {2}, kLong).to(cuda0())),
                      Catch::Contains("Target -2 is out of bounds (at position 0"));
}

TEST_CASE("gradcheck in float64 on CUDA for cross_entropy", "[loss][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = random_cpu({4, 5}, kDouble, 9).to(cuda0()).requires_grad_();
  Tensor t = from_vector({0, 4, 2, 2}, {4}, kLong).to(cuda0());
  CHECK(autograd::gradcheck([t](const std::vector<Tensor>& in) { return std::vector<Tensor>{cross_entropy(in[0], t)}; },
                            {x}));
}

TEST_CASE("cross_entropy on CUDA matches the CPU, forward and backward, on every class count and layout",
          "[loss][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  std::vector<Shape> shapes;
  for (const Shape& s : row_shapes())
    if (s[1] > 0) shapes.push_back(s);  // a target needs a class
  std::vector<Case> cs = cases(floating_types(), shapes);
  // More rows than the grid's blocks hold at once (a grid-stride loop over rows). Every thread
  // of these launches is emulated, so one dtype and layout.
  cs.push_back(Case{kFloat, {17000, 3}, Layout::Contiguous});
  uint64_t seed = 0;
  for (const Case& c : cs) {
    Tensor targets = random_indices({c.shape[0]}, c.shape[1], ++seed);
    INFO(describe(c));
    CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return cross_entropy(in[0], in[1]); },
                      {arg(c.shape, -3, 3).in(c.layout), fixed(targets)}, c.dtype,
                      options(Kind::Reduction, c.dtype, Kind::Reduction, true, seed)) == "");
  }
}
