// Tests ops/fused_sgd.cpp (aten::_fused_sgd_, kernels/cpu/fused_sgd.h): SGD's rule on float,
// double and bf16 parameters across thread chunks and vector tails, with and without momentum,
// the first step's buffer, the Meta kernel, and the errors. (That the op gives optim::SGD's
// single-tensor path bit for bit is tested in tests/nn/optim/sgd_test.cpp.)
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "remat.h"
#include "tests/testing/op_testing.h"
#include "tests/testing/sgd_configs.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {

using Config = SGDConfig;
const std::vector<Config>& kConfigs = kSGDConfigs;

// One SGD step in double, element by element (torch.optim.SGD's rule).
void reference_step(std::vector<double>& p, const std::vector<double>& g, std::vector<double>& buf, const Config& c,
                    bool first) {
  for (size_t i = 0; i < p.size(); ++i) {
    double d = c.maximize ? -g[i] : g[i];
    d += c.weight_decay * p[i];
    if (c.momentum != 0) {
      buf[i] = first ? d : c.momentum * buf[i] + (1 - c.dampening) * d;
      d = c.nesterov ? d + c.momentum * buf[i] : buf[i];
    }
    p[i] -= c.lr * d;
  }
}


}  // namespace

TEST_CASE("_fused_sgd_: SGD's rule, three steps, every dtype and option", "[fused_sgd]") {
  const int64_t n = 70001;  // several thread chunks, a bf16 block tail and a vector tail
  for (const Config& c : kConfigs) {
    for (ScalarType dt : {kDouble, kFloat, kBFloat16}) {
      INFO(toString(dt) << " momentum " << c.momentum << " nesterov " << c.nesterov << " maximize " << c.maximize);
      Tensor p = randn_seeded({n}, 81).to(dt);
      Tensor buf = c.momentum != 0 ? empty({n}, TensorOptions().dtype(dt)) : Tensor();
      std::vector<double> rp = p.to_vector(), rb(n, 0.0);
      for (int64_t k = 1; k <= 3; ++k) {
        Tensor g = randn_seeded({n}, 90 + static_cast<uint64_t>(k)).to(dt);
        fused_sgd_step(p, g, buf, c, k == 1);
        reference_step(rp, g.to_vector(), rb, c, k == 1);
        if (dt == kBFloat16) {  // parameter and buffer rounded to bf16 each step: compare loosely
          rp = p.to_vector();
          if (buf.defined()) rb = buf.to_vector();
        }
      }
      const double tol = dt == kDouble ? 1e-12 : dt == kFloat ? 1e-5 : 1e-2;
      check_values(p, rp, tol);
      if (buf.defined()) check_values(buf, rb, tol);
    }
  }
}

TEST_CASE("_fused_sgd_: bf16 computes in float and rounds once per step", "[fused_sgd]") {
  const int64_t n = 5000;
  const Config c{0.01, 0.9, 0.1, 0.1, false, false};
  Tensor p = randn_seeded({n}, 7).to(kBFloat16), buf = empty({n}, TensorOptions().dtype(kBFloat16));
  for (int64_t k = 1; k <= 3; ++k) {
    Tensor g = randn_seeded({n}, 10 + static_cast<uint64_t>(k)).to(kBFloat16);
    // The float kernel on the same (widened) values, then rounded: what the bf16 kernel must give.
    Tensor pf = p.to(kFloat), bf = buf.to(kFloat);
    fused_sgd_step(pf, g.to(kFloat), bf, c, k == 1);
    fused_sgd_step(p, g, buf, c, k == 1);
    CHECK(equal(p, pf.to(kBFloat16)));
    CHECK(equal(buf, bf.to(kBFloat16)));
  }
}

TEST_CASE("_fused_sgd_: the first step writes the buffer without reading it; maximize; strided grad",
          "[fused_sgd]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Config c{0.0, 0.9, 0.1, 0.0, false, false};
  Tensor p = tensor({1, -2}, {2}), buf = tensor({nan, nan}, {2});
  fused_sgd_step(p, tensor({0.5, -1}, {2}), buf, c, /*first=*/true);
  check_values(buf, {0.5, -1});  // a copy of the gradient, as PyTorch's clone (the NaNs unread)
  check_values(p, {0.95, -1.9});
  // Not the first step: buf = 0.9 buf + g.
  fused_sgd_step(p, tensor({0.1, 0.3}, {2}), buf, c, false);
  check_values(buf, {0.55, -0.6});
  check_values(p, {0.895, -1.84});
  // maximize ascends: the same as descending on -g (weight decay and momentum included).
  const Config m{0.1, 0.9, 0.1, 0.0, true, true};
  Tensor p1 = tensor({1, -2}, {2}), b1 = empty({2}), p2 = p1.clone(), b2 = empty({2});
  for (bool first : {true, false}) {
    fused_sgd_step(p1, tensor({0.5, -1}, {2}), b1, m, first);
    fused_sgd_step(p2, tensor({-0.5, 1}, {2}), b2, {m.weight_decay, m.momentum, m.lr, m.dampening, true, false}, first);
  }
  CHECK(equal(p1, p2));
  CHECK(equal(b1, b2));
  // A strided gradient is read as is.
  Tensor p5 = tensor({1, -2}, {2}), p6 = p5.clone();
  const Config plain{0.0, 0.0, 0.1, 0.0, false, false};
  fused_sgd_step(p5, tensor({0.5, 0, -1, 0}, {2, 2}).slice(1, 0, 1).squeeze(1), Tensor(), plain, false);
  fused_sgd_step(p6, tensor({0.5, -1}, {2}), Tensor(), plain, false);
  CHECK(equal(p5, p6));
  CHECK(p5._version() == 1);
}

TEST_CASE("_fused_sgd_: Meta checks and bumps versions", "[fused_sgd]") {
  Tensor p = meta({3}), buf = meta({3});
  fused_sgd_step(p, meta({3}), buf, {0.0, 0.9, 0.1, 0.0, false, false}, true);
  CHECK(p._version() == 1);
  CHECK(buf._version() == 1);
  Tensor q = meta({2, 3});
  fused_sgd_step(q, meta({3, 2}).t(), Tensor(), {0.0, 0.0, 0.1, 0.0, false, false}, false);
  CHECK(q._version() == 1);
  REQUIRE_THROWS_WITH(fused_sgd_step(q, meta({3}), Tensor(), {0.0, 0.0, 0.1, 0.0, false, false}, false),
                      Contains("aten::_fused_sgd_") && Contains("grad") && Contains("[2, 3]") && Contains("[3]"));
}

TEST_CASE("_fused_sgd_: errors name the op and the values", "[fused_sgd]") {
  const Config mom{0.0, 0.9, 0.1, 0.0, false, false}, plain{0.0, 0.0, 0.1, 0.0, false, false};
  Tensor a = zeros({3}), b = zeros({3});
  REQUIRE_THROWS_WITH(fused_sgd_step(a, zeros({4}), b, mom, false),
                      Contains("aten::_fused_sgd_: expected grad to match the parameter ([3], Float), but got [4], Float"));
  REQUIRE_THROWS_WITH(fused_sgd_step(a, zeros({3}, TensorOptions().dtype(kDouble)), b, mom, false),
                      Contains("aten::_fused_sgd_") && Contains("grad") && Contains("Double"));
  REQUIRE_THROWS_WITH(fused_sgd_step(a, zeros({3}), zeros({2}), mom, false),
                      Contains("aten::_fused_sgd_: expected momentum_buffer to match the parameter ([3], Float), "
                               "but got [2], Float"));
  REQUIRE_THROWS_WITH(fused_sgd_step(a, zeros({3}), Tensor(), mom, false),
                      Contains("aten::_fused_sgd_: momentum is 0.9 but momentum_buffer is None"));
  REQUIRE_THROWS_WITH(fused_sgd_step(a, zeros({3}), b, plain, false),
                      Contains("aten::_fused_sgd_: momentum is 0 but a momentum_buffer was given ([3], Float)"));
  REQUIRE_THROWS_WITH(fused_sgd_step(a, Tensor(), b, mom, false),
                      Contains("aten::_fused_sgd_: argument 'grad' is an undefined tensor"));
  Tensor t = zeros({2, 3}).t();
  REQUIRE_THROWS_WITH(fused_sgd_step(t, zeros({3, 2}), Tensor(), plain, false),
                      Contains("aten::_fused_sgd_") && Contains("contiguous") && Contains("self") &&
                          Contains("[1, 3]"));
  Tensor c = zeros({3, 2});
  REQUIRE_THROWS_WITH(fused_sgd_step(c, zeros({3, 2}), zeros({2, 3}).t(), mom, false),
                      Contains("aten::_fused_sgd_: expected momentum_buffer to be contiguous") && Contains("[1, 3]"));
  Tensor h = zeros({2}, TensorOptions().dtype(kHalf));
  REQUIRE_THROWS_WITH(fused_sgd_step(h, zeros_like(h), Tensor(), plain, false),
                      Contains("aten::_fused_sgd_") && Contains("Float, Double or BFloat16") && Contains("Half"));
  Tensor l = zeros({2}, TensorOptions().dtype(kLong));
  REQUIRE_THROWS_WITH(fused_sgd_step(l, zeros_like(l), Tensor(), plain, false),
                      Contains("aten::_fused_sgd_") && Contains("floating point") && Contains("Long"));
  REQUIRE_THROWS_WITH(fused_sgd_step(a, meta({3}), Tensor(), plain, false),
                      Contains("aten::_fused_sgd_") && Contains("same device") && Contains("cpu") && Contains("meta"));
}

#ifndef REMAT_CUDA  // a CUDA build has the kernel (ops/cuda/fused_sgd.cpp, tests/ops/cuda/fused_sgd_test.cpp)
TEST_CASE("_fused_sgd_ has no CUDA kernel: the dispatcher's error names the op and the backend", "[fused_sgd]") {
  // In a build without CUDA the op has CPU and Meta kernels only.
  // CPU tensors stand in for CUDA ones: the call goes straight to the CUDA entry of the table.
  using Sig = Tensor(const Tensor&, const Tensor&, const Tensor&, double, double, double, double, bool, bool, bool);
  auto op = find_op("aten::_fused_sgd_").typed<Sig>();
  Tensor p = zeros({2}), g = zeros({2});
  REQUIRE_THROWS_WITH(op.redispatch(DispatchKeySet(DispatchKey::CUDA), p, g, Tensor(), 0.0, 0.0, 0.1, 0.0, false,
                                    false, false),
                      Contains("Could not run 'aten::_fused_sgd_' with arguments from the 'CUDA' backend") &&
                          Contains("[CPU, Meta]"));
}
#endif
