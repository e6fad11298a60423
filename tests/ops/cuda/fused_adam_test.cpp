// Tests ops/cuda/fused_adam.cpp: _fused_adamw_ on CUDA against the CPU op (Float, Double, strided
// gradients, several steps), its errors, and that optim::AdamW with fused(true) runs it on CUDA.
#include <catch2/catch.hpp>

#include <vector>

#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;
using namespace remat::testing;

namespace {

std::vector<double> values(int64_t n, double scale, double shift) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(scale * static_cast<double>((i * 37 + 11) % 101) / 101.0 + shift);
  return v;
}

}  // namespace

TEST_CASE("_fused_adamw_ on CUDA: the CPU's update, step after step, in Float and Double", "[adamw][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dtype : {kFloat, kDouble}) {
    for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{4097}}) {
      INFO(toString(dtype) << ", " << n << " elements");
      const TensorOptions on_cpu = TensorOptions().dtype(dtype);
      Tensor p = from_vector(values(n, 2.0, -1.0), {n}, on_cpu), m = zeros({n}, on_cpu), v = zeros({n}, on_cpu);
      Tensor pc = p.to(cuda0()), mc = m.to(cuda0()), vc = v.to(cuda0());
      for (int64_t step = 1; step <= 3; ++step) {
        // A strided gradient: every other element of a longer vector (copied on both devices).
        Tensor g = slice(from_vector(values(2 * n, 0.5, -0.2 * static_cast<double>(step)), {2 * n}, on_cpu), 0, 0,
                         2 * n, 2);
        _fused_adamw_(p, m, v, g, 1e-2, 0.9, 0.999, 0.1, 1e-8, step, false);
        _fused_adamw_(pc, mc, vc, g.to(cuda0()), 1e-2, 0.9, 0.999, 0.1, 1e-8, step, false);
      }
      const double tol = dtype == kFloat ? 1e-6 : 1e-12;
      const std::vector<double> a = p.to_vector(), b = pc.to_vector(), ma = m.to_vector(), mb = mc.to_vector();
      for (size_t i = 0; i < a.size(); ++i) {
        CHECK(b[i] == Approx(a[i]).epsilon(tol).margin(tol));
        CHECK(mb[i] == Approx(ma[i]).epsilon(tol).margin(tol));
      }
    }
  }
}

TEST_CASE("_fused_adamw_ on CUDA: its errors name the op and the values", "[adamw][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const TensorOptions bf = TensorOptions().dtype(kBFloat16).device(cuda0());
  Tensor p = zeros({4}, bf), m = zeros({4}, bf), v = zeros({4}, bf), g = zeros({4}, bf);
  REQUIRE_THROWS_WITH(_fused_adamw_(p, m, v, g, 1e-3, 0.9, 0.999, 0.0, 1e-8, 1, false),
                      "aten::_fused_adamw_: a BFloat16 parameter is not supported on CUDA (its moments would be "
                      "BFloat16; use fused(false), or a Float parameter)");
  const TensorOptions f = TensorOptions().device(cuda0());
  Tensor pf = zeros({4}, f), mf = zeros({4}, f), vf = zeros({4}, f), gf = zeros({4}, f);
  REQUIRE_THROWS_WITH(_fused_adamw_(pf, mf, vf, gf, 1e-3, 0.9, 0.999, 0.0, 1e-8, 1, true),
                      "aten::_fused_adamw_: maximize=True is not supported on CUDA (use fused(false))");
  REQUIRE_THROWS_WITH(_fused_adamw_(pf, mf, vf, gf, 1e-3, 0.9, 0.999, 0.0, 1e-8, 0, false),
                      "aten::_fused_adamw_: step must be at least 1 (got 0)");
  Tensor small = zeros({3}, f);
  REQUIRE_THROWS_WITH(_fused_adamw_(pf, mf, small, gf, 1e-3, 0.9, 0.999, 0.0, 1e-8, 1, false),
                      Catch::StartsWith("aten::_fused_adamw_: expected exp_avg_sq to match the parameter"));
}

TEST_CASE("AdamW with fused(true) runs _fused_adamw_ on CUDA: no temporaries, the CPU's values", "[adamw][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // The events of the second step (the first makes the moments) on `device`, and the parameter after.
  auto second_step = [](Device device, bool fused, std::vector<double>* after) {
    Tensor w = from_vector(values(64, 1.0, -0.5), {64}, TensorOptions().device(device)).requires_grad_(true);
    optim::AdamW opt({w}, optim::AdamWOptions(1e-2).fused(fused));
    sum(mul(w, w)).backward();
    opt.step();
    size_t events = 0;
    {
      MemoryTracker tracker(device);
      opt.step();
      events = tracker.timeline().size();
    }
    *after = w.to_vector();
    return events;
  };
  std::vector<double> fused_cuda, plain_cuda, fused_cpu;
  CHECK(second_step(cuda0(), true, &fused_cuda) == 0);  // one op, in place
  CHECK(second_step(cuda0(), false, &plain_cuda) > 0);  // the op sequence's temporaries
  second_step(Device{kCPU}, true, &fused_cpu);
  // Float rounding of updates to parameters of magnitude up to 1 (some land near 0): an absolute
  // bound of a few float epsilons of the parameter, not one relative to the result.
  for (size_t i = 0; i < fused_cpu.size(); ++i) {
    CHECK(fused_cuda[i] == Approx(fused_cpu[i]).epsilon(1e-6).margin(1e-6));
    CHECK(plain_cuda[i] == Approx(fused_cpu[i]).epsilon(1e-6).margin(1e-6));
  }
}
