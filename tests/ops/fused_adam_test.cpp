// Tests ops/fused_adam.cpp (aten::_fused_adamw_, kernels/cpu/fused_adam.h): AdamW's rule on
// float, double and bf16 parameters across thread chunks and block tails, the Meta kernel, and
// the errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {

// One AdamW step in double, element by element (torch.optim.AdamW's rule).
void reference_step(std::vector<double>& p, const std::vector<double>& g, std::vector<double>& m,
                    std::vector<double>& v, double lr, double b1, double b2, double wd, double eps, int64_t step) {
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] *= 1 - lr * wd;
    m[i] += (1 - b1) * (g[i] - m[i]);
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    const double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(b2, double(step))) + eps;
    p[i] -= lr / (1 - std::pow(b1, double(step))) * m[i] / denom;
  }
}

}  // namespace

TEST_CASE("_fused_adamw_: AdamW's rule, three steps, every dtype", "[fused_adam]") {
  const int64_t n = 70001;  // several thread chunks and a block tail
  for (ScalarType dt : {kDouble, kFloat, kBFloat16}) {
    INFO(toString(dt));
    Tensor p = randn_seeded({n}, 81).to(dt), m = zeros({n}, TensorOptions().dtype(dt)), v = zeros_like(m);
    std::vector<double> rp = p.to_vector(), rm(n, 0.0), rv(n, 0.0);
    for (int64_t step = 1; step <= 3; ++step) {
      Tensor g = randn_seeded({n}, 90 + static_cast<uint64_t>(step)).to(dt);
      std::vector<double> rg = g.to_vector();
      _fused_adamw_(p, m, v, g, 1e-2, 0.9, 0.999, 0.1, 1e-8, step);
      reference_step(rp, rg, rm, rv, 1e-2, 0.9, 0.999, 0.1, 1e-8, step);
      if (dt == kBFloat16) {  // moments and parameters rounded to bf16 each step: compare loosely
        rp = p.to_vector();
        rm = m.to_vector();
        rv = v.to_vector();
      }
    }
    const double tol = dt == kDouble ? 1e-12 : dt == kFloat ? 1e-5 : 1e-2;
    check_values(p, rp, tol);
    check_values(m, rm, tol);
  }
  // maximize ascends: the same as descending on -g.
  Tensor p1 = tensor({1, -2}, {2}), m1 = zeros({2}), v1 = zeros({2});
  Tensor p2 = p1.clone(), m2 = zeros({2}), v2 = zeros({2});
  _fused_adamw_(p1, m1, v1, tensor({0.5, -1}, {2}), 0.1, 0.9, 0.999, 0.0, 1e-8, 1, /*maximize=*/true);
  _fused_adamw_(p2, m2, v2, tensor({-0.5, 1}, {2}), 0.1, 0.9, 0.999, 0.0, 1e-8, 1);
  CHECK(equal(p1, p2));
  // A strided gradient is read as is.
  Tensor p3 = tensor({1, -2}, {2}), m3 = zeros({2}), v3 = zeros({2});
  _fused_adamw_(p3, m3, v3, tensor({0.5, 0, -1, 0}, {2, 2}).slice(1, 0, 1).squeeze(1), 0.1, 0.9, 0.999, 0.0, 1e-8, 1);
  Tensor p4 = tensor({1, -2}, {2}), m4 = zeros({2}), v4 = zeros({2});
  _fused_adamw_(p4, m4, v4, tensor({0.5, -1}, {2}), 0.1, 0.9, 0.999, 0.0, 1e-8, 1);
  CHECK(equal(p3, p4));
}

TEST_CASE("_fused_adamw_: Meta checks and bumps versions; errors name the values", "[fused_adam]") {
  Tensor p = meta({3}), m = meta({3}), v = meta({3});
  _fused_adamw_(p, m, v, meta({3}), 1e-3, 0.9, 0.999, 0.0, 1e-8, 1);
  CHECK(p._version() == 1);
  CHECK(v._version() == 1);
  Tensor a = zeros({3}), b = zeros({3}), c = zeros({3});
  REQUIRE_THROWS_WITH(_fused_adamw_(a, b, c, zeros({4}), 1e-3, 0.9, 0.999, 0.0, 1e-8, 1),
                      Contains("aten::_fused_adamw_") && Contains("grad") && Contains("[3]") && Contains("[4]"));
  REQUIRE_THROWS_WITH(_fused_adamw_(a, b, c, zeros({3}, TensorOptions().dtype(kDouble)), 1e-3, 0.9, 0.999, 0.0, 1e-8, 1),
                      Contains("aten::_fused_adamw_") && Contains("Double"));
  REQUIRE_THROWS_WITH(_fused_adamw_(a, b, c, zeros({3}), 1e-3, 0.9, 0.999, 0.0, 1e-8, 0),
                      Contains("aten::_fused_adamw_") && Contains("step must be at least 1") && Contains("got 0"));
  Tensor t = zeros({2, 3}).t(), tm = zeros({3, 2}), tv = zeros({3, 2});
  REQUIRE_THROWS_WITH(_fused_adamw_(t, tm, tv, zeros({3, 2}), 1e-3, 0.9, 0.999, 0.0, 1e-8, 1),
                      Contains("aten::_fused_adamw_") && Contains("contiguous") && Contains("self"));
  Tensor h = zeros({2}, TensorOptions().dtype(kHalf)), hm = zeros_like(h), hv = zeros_like(h);
  REQUIRE_THROWS_WITH(_fused_adamw_(h, hm, hv, zeros_like(h), 1e-3, 0.9, 0.999, 0.0, 1e-8, 1),
                      Contains("aten::_fused_adamw_") && Contains("Half"));
}
