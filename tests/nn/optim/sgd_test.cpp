// Tests nn/optim/sgd.cpp: PyTorch's SGD rule step by step, param groups, errors.
//
// The expected values follow torch.optim.SGD's single-tensor rule, evaluated in float64 for a
// 2-element parameter p0 = [1, -2] and the gradient sequence g1 = [0.5, -1], g2 = [0.1, 0.3],
// g3 = [-0.2, 0.4]. For example, lr 0.1, momentum 0.9, dampening 0.1, weight_decay 0.01:
//   step 1: d = g1 + 0.01 p0 = [0.51, -1.02];  buf = d;  p1 = p0 - 0.1 buf = [0.949, -1.898]
//   step 2: d = g2 + 0.01 p1;  buf = 0.9 buf + 0.9 d;  p2 = p1 - 0.1 buf = [0.8932459, -1.8314918]
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <vector>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::check_values;

namespace {

const std::vector<std::vector<double>> kGrads = {{0.5, -1.0}, {0.1, 0.3}, {-0.2, 0.4}};

// Runs one optimizer step per gradient in kGrads on p = [1, -2]; checks p after each.
void check_trajectory(const optim::SGDOptions& options, const std::vector<std::vector<double>>& expected,
                      ScalarType dtype = kDouble, double epsilon = 1e-14) {
  Tensor p = from_vector({1.0, -2.0}, {2}, dtype).requires_grad_(true);
  optim::SGD opt({p}, options);
  for (size_t k = 0; k < expected.size(); ++k) {
    INFO("step " << k + 1);
    p.set_grad(from_vector(kGrads[k], {2}, dtype));
    opt.step();
    check_values(p, expected[k], epsilon);
  }
}

}  // namespace

TEST_CASE("SGD without momentum: p -= lr * g", "[optim][sgd]") {
  check_trajectory(optim::SGDOptions(0.1), {{0.95, -1.9}, {0.94, -1.93}, {0.96, -1.97}});
}

TEST_CASE("SGD with momentum, dampening and weight decay follows PyTorch's rule", "[optim][sgd]") {
  check_trajectory(optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01),
                   {{0.949, -1.898},
                    {0.89324589999999993, -1.8314918},
                    {0.86026328868999991, -1.8059860773800001}});
}

TEST_CASE("SGD with Nesterov momentum", "[optim][sgd]") {
  // d = g + wd p;  buf = 0.9 buf + d (clone of d at step 1);  p -= lr (d + 0.9 buf)
  check_trajectory(optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.1).nesterov(true),
                   {{0.943, -1.886},
                    {0.90024149999999992, -1.8479829999999999},
                    {0.88095005574999996, -1.8291988614999999}});
}

TEST_CASE("SGD with maximize ascends", "[optim][sgd]") {
  check_trajectory(optim::SGDOptions(0.1).momentum(0.5).maximize(true),
                   {{1.05, -2.1}, {1.085, -2.12}, {1.0825, -2.09}});
}

TEST_CASE("SGD on float32 parameters matches the float64 trajectory to float precision", "[optim][sgd]") {
  check_trajectory(optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01),
                   {{0.949, -1.898},
                    {0.89324589999999993, -1.8314918},
                    {0.86026328868999991, -1.8059860773800001}},
                   kFloat, 1e-6);
}

TEST_CASE("SGD keeps a momentum buffer per parameter, created on its first step", "[optim][sgd]") {
  Tensor p = from_vector({1.0, -2.0}, {2}, kDouble).requires_grad_(true);
  optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9));
  CHECK_FALSE(opt.momentum_buffer(p).defined());
  p.set_grad(from_vector({0.5, -1.0}, {2}, kDouble));
  opt.step();
  // First step: the buffer is a copy of the gradient (no dampening), not an alias of it.
  Tensor buf = opt.momentum_buffer(p);
  REQUIRE(buf.defined());
  check_values(buf, {0.5, -1.0});
  CHECK_FALSE(buf.is_alias_of(p.grad()));
  CHECK_FALSE(buf.requires_grad());
  // The step ran under no-grad: p is still a leaf with no history.
  CHECK(p.is_leaf());
  CHECK(p.requires_grad());
  CHECK(p.grad_fn() == nullptr);
}

TEST_CASE("SGD skips parameters without a gradient", "[optim][sgd]") {
  Tensor a = from_vector({1.0}, {1}, kDouble).requires_grad_(true);
  Tensor b = from_vector({2.0}, {1}, kDouble).requires_grad_(true);
  optim::SGD opt({a, b}, optim::SGDOptions(0.5).momentum(0.9));
  a.set_grad(from_vector({1.0}, {1}, kDouble));
  opt.step();
  check_values(a, {0.5});
  check_values(b, {2.0});
  CHECK_FALSE(opt.momentum_buffer(b).defined());
}

TEST_CASE("SGD's update runs through the dispatcher (a dispatch mode sees it)", "[optim][sgd]") {
  Tensor p = from_vector({1.0, 2.0}, {2}, kDouble).requires_grad_(true);
  optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9));
  auto counter = std::make_shared<remat::testing::OpCounter>();
  p.set_grad(ones({2}, kDouble));
  opt.step();
  {
    DispatchModeGuard guard(counter);
    opt.step();
  }
  CHECK(counter->count("aten::mul_.Scalar") == 1);  // buf *= momentum
  CHECK(counter->count("aten::add_") == 2);         // buf += g; p += -lr * buf
}

TEST_CASE("SGD rejects bad hyperparameters with PyTorch's messages", "[optim][sgd]") {
  Tensor p = zeros({2}, kDouble).requires_grad_(true);
  REQUIRE_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(-1)), Contains("Invalid learning rate: -1"));
  REQUIRE_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(0.1).momentum(-0.5)), Contains("Invalid momentum value: -0.5"));
  REQUIRE_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(0.1).weight_decay(-1e-3)),
                      Contains("Invalid weight_decay value: -0.001"));
  REQUIRE_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(0.1).nesterov(true)),
                      Contains("Nesterov momentum requires a momentum and zero dampening"));
  REQUIRE_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).nesterov(true)),
                      Contains("Nesterov momentum requires a momentum and zero dampening"));
  REQUIRE_THROWS_WITH(optim::SGD({p}, optim::SGDOptions(std::nan(""))), Contains("Invalid learning rate: nan"));
  REQUIRE_THROWS_WITH(optim::SGD(std::vector<Tensor>{}, optim::SGDOptions(0.1)),
                      Contains("optimizer got an empty parameter list"));
  // A group's own options are checked too.
  std::vector<optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{p}, std::make_unique<optim::SGDOptions>(-2));
  REQUIRE_THROWS_WITH(optim::SGD(groups, optim::SGDOptions(0.1)), Contains("Invalid learning rate: -2"));
}

namespace {

// Runs `steps` steps of SGD with `options` twice, with fused(false) and fused(true), on two
// parameters (one spanning several thread chunks and a vector tail, one small 2-D), and checks
// after every step that the parameters and momentum buffers are bitwise equal.
void check_fused_matches_single_tensor(optim::SGDOptions options, ScalarType dtype, int steps = 4) {
  const std::vector<Shape> shapes = {{70001}, {3, 5}};
  std::vector<Tensor> ref, fused;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Tensor init = remat::testing::seeded_randn(shapes[i], 40 + i, dtype);
    ref.push_back(init.clone().requires_grad_(true));
    fused.push_back(init.clone().requires_grad_(true));
  }
  optim::SGD opt_ref(ref, options.fused(false));
  optim::SGD opt_fused(fused, options.fused(true));
  for (int k = 0; k < steps; ++k) {
    INFO("step " << k + 1);
    for (size_t i = 0; i < shapes.size(); ++i) {
      Tensor g = remat::testing::seeded_randn(shapes[i], 100 + 10 * static_cast<uint64_t>(k) + i, dtype);
      ref[i].set_grad(g);
      fused[i].set_grad(g.clone());
    }
    opt_ref.step();
    opt_fused.step();
    for (size_t i = 0; i < shapes.size(); ++i) {
      INFO("parameter " << i);
      CHECK(equal(fused[i], ref[i]));
      Tensor b_ref = opt_ref.momentum_buffer(ref[i]), b_fused = opt_fused.momentum_buffer(fused[i]);
      REQUIRE(b_ref.defined() == b_fused.defined());
      if (b_ref.defined()) CHECK(equal(b_fused, b_ref));
    }
  }
}

}  // namespace

TEST_CASE("SGD with fused(true) gives the single-tensor path's bits, float and double", "[optim][sgd]") {
  CHECK_FALSE(optim::SGDOptions().fused());  // PyTorch's default
  for (ScalarType dt : {kDouble, kFloat}) {
    INFO(toString(dt));
    check_fused_matches_single_tensor(optim::SGDOptions(0.1), dt);
    check_fused_matches_single_tensor(optim::SGDOptions(0.1).weight_decay(0.05).maximize(true), dt);
    check_fused_matches_single_tensor(optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01), dt);
    check_fused_matches_single_tensor(optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.1).nesterov(true), dt);
    check_fused_matches_single_tensor(optim::SGDOptions(0.1).momentum(0.5).maximize(true), dt);
  }
}

TEST_CASE("SGD with fused(true): one op per parameter; the first step clones the gradient", "[optim][sgd]") {
  Tensor p = from_vector({1.0, -2.0}, {2}, kDouble).requires_grad_(true);
  optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9).fused(true));
  p.set_grad(from_vector({0.5, -1.0}, {2}, kDouble));
  opt.step();
  // As the single-tensor path (and PyTorch's fused one): the buffer is a copy of the gradient.
  Tensor buf = opt.momentum_buffer(p);
  REQUIRE(buf.defined());
  CHECK(equal(buf, p.grad()));
  CHECK_FALSE(buf.is_alias_of(p.grad()));
  CHECK_FALSE(buf.requires_grad());
  check_values(p, {0.95, -1.9});
  CHECK(p.is_leaf());
  CHECK(p.grad_fn() == nullptr);
  // Later steps: one dispatched op, which updates p and the buffer in place.
  auto counter = std::make_shared<remat::testing::OpCounter>();
  const int64_t v = p._version(), vb = buf._version();
  {
    DispatchModeGuard guard(counter);
    opt.step();
  }
  CHECK(counter->calls == std::map<std::string, int>{{"aten::_fused_sgd_", 1}});
  CHECK(p._version() == v + 1);
  CHECK(buf._version() == vb + 1);
  CHECK(opt.momentum_buffer(p).is_same(buf));
  check_values(buf, {0.95, -1.9});  // 0.9 buf + g, g still [0.5, -1]
}

TEST_CASE("SGD with fused(true) on bf16 follows the single-tensor path to bf16 precision", "[optim][sgd]") {
  // The fused kernel rounds to bf16 once per step (arithmetic in float), the op sequence once per
  // op (five roundings here): after three steps the two differ by a few bf16 ulps of the values'
  // scale (2^-8 relative to |x| + 1; relative to x alone it is unbounded where momentum cancels).
  Tensor init = remat::testing::seeded_randn({4097}, 5).to(kBFloat16);
  Tensor a = init.clone().requires_grad_(true), b = init.clone().requires_grad_(true);
  const auto o = optim::SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01);
  optim::SGD opt_a({a}, o), opt_b({b}, optim::SGDOptions(o).fused(true));
  for (uint64_t k = 0; k < 3; ++k) {
    Tensor g = remat::testing::seeded_randn({4097}, 60 + k).to(kBFloat16);
    a.set_grad(g);
    b.set_grad(g.clone());
    opt_a.step();
    opt_b.step();
  }
  auto worst = [](const Tensor& got, const Tensor& want) {  // max |got - want| / (1 + |want|)
    std::vector<double> x = got.to_vector(), y = want.to_vector();
    double m = 0;
    for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]) / (1 + std::abs(y[i])));
    return m;
  };
  CHECK(worst(b, a) <= 2e-2);
  CHECK(worst(opt_b.momentum_buffer(b), opt_a.momentum_buffer(a)) <= 2e-2);
  CHECK(worst(b, a) > 0);  // not the same bits: the roundings differ
}

TEST_CASE("SGD with fused(true) on the Meta device: the CPU step's memory, and fallbacks", "[optim][sgd]") {
  auto peak_of_two_steps = [](Device dev) {
    Tensor p = zeros({1024}, TensorOptions().device(dev)).requires_grad_(true);
    optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9).fused(true));
    const int64_t base = memory_allocated(dev);
    reset_peak_memory_stats(dev);
    for (int k = 0; k < 2; ++k) {
      p.set_grad(ones({1024}, TensorOptions().device(dev)));
      opt.step();
    }
    return std::make_pair(max_memory_allocated(dev) - base, memory_allocated(dev) - base);
  };
  const auto cpu = peak_of_two_steps(Device{kCPU}), meta = peak_of_two_steps(Device{kMeta});
  CHECK(cpu == meta);
  CHECK(cpu.second == 4096 + 4096);  // the gradient and the buffer, nothing else
  // A non-contiguous parameter (or a Half one) takes the op sequence.
  Tensor t = zeros({3, 2}, kDouble).t().requires_grad_(true);
  optim::SGD opt({t}, optim::SGDOptions(0.5).momentum(0.9).fused(true));
  t.set_grad(ones({2, 3}, kDouble));
  auto counter = std::make_shared<remat::testing::OpCounter>();
  {
    DispatchModeGuard guard(counter);
    opt.step();
  }
  CHECK(counter->count("aten::_fused_sgd_") == 0);
  check_values(t, {-0.5, -0.5, -0.5, -0.5, -0.5, -0.5});
}

TEST_CASE("SGD(fused) in a dry run takes the path of the device it counts like", "[optim][sgd]") {
  // Allocations in a second step (the first makes the momentum buffer): none for the fused op,
  // the op sequence's temporaries otherwise. _fused_sgd_ has CPU and CUDA kernels, for Float,
  // Double and BFloat16 parameters; a Half one takes the op sequence on either.
  auto second_step_events = [](DeviceType imitated, ScalarType dtype) {
    DryRun dry(imitated);
    Tensor p = empty({1000}, TensorOptions().dtype(dtype).device(kMeta)).requires_grad_(true);
    optim::SGD opt({p}, optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.01).fused(true));
    sum(mul(p, p)).backward();
    opt.step();
    MemoryTracker tracker(Device{kMeta});
    opt.step();
    return tracker.timeline().size();
  };
  CHECK(second_step_events(kCPU, kFloat) == 0);
  CHECK(second_step_events(kCUDA, kFloat) == 0);
  CHECK(second_step_events(kCUDA, kBFloat16) == 0);
  CHECK(second_step_events(kCPU, kHalf) > 0);
  CHECK(second_step_events(kCUDA, kHalf) > 0);
}
