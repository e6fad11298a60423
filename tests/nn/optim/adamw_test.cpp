// Tests nn/optim/adamw.cpp: PyTorch's AdamW rule step by step (defaults, custom betas, amsgrad,
// maximize), state, errors.
//
// Expected values follow torch.optim.AdamW's single-tensor rule in float64 for p0 = [1, -2]. With
// the defaults (lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight_decay 1e-2) and g1 = [0.5, -1]:
//   p <- p * (1 - 1e-3 * 1e-2)                     = [0.99999, -1.99998]
//   m = 0.1 g1 = [0.05, -0.1];  v = 0.001 g1^2 = [2.5e-4, 1e-3]
//   denom = sqrt(v) / sqrt(1 - 0.999) + 1e-8 = |g1| + 1e-8
//   p <- p - (1e-3 / 0.1) * m / denom              = [0.99899000002, -1.99898000001]
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::check_values;

namespace {

const std::vector<std::vector<double>> kGrads = {{0.5, -1.0}, {0.1, 0.3}, {-0.2, 0.4}};
// A large first gradient, then small ones: v decays below its running maximum (amsgrad matters).
const std::vector<std::vector<double>> kDecayingGrads = {{3.0, -4.0}, {0.1, 0.2}, {0.01, -0.02}, {0.5, 0.5}};

void check_trajectory(const optim::AdamWOptions& options, const std::vector<std::vector<double>>& grads,
                      const std::vector<std::vector<double>>& expected, ScalarType dtype = kDouble,
                      double epsilon = 1e-13) {
  Tensor p = from_vector({1.0, -2.0}, {2}, dtype).requires_grad_(true);
  optim::AdamW opt({p}, options);
  for (size_t k = 0; k < expected.size(); ++k) {
    INFO("step " << k + 1);
    p.set_grad(from_vector(grads[k], {2}, dtype));
    opt.step();
    check_values(p, expected[k], epsilon);
  }
}

}  // namespace

TEST_CASE("AdamW's defaults are PyTorch's", "[optim][adamw]") {
  optim::AdamWOptions o;
  CHECK(o.lr() == 1e-3);
  CHECK(std::get<0>(o.betas()) == 0.9);
  CHECK(std::get<1>(o.betas()) == 0.999);
  CHECK(o.eps() == 1e-8);
  CHECK(o.weight_decay() == 1e-2);
  CHECK_FALSE(o.amsgrad());
  CHECK_FALSE(o.maximize());
}

TEST_CASE("AdamW with the defaults follows PyTorch's rule", "[optim][adamw]") {
  check_trajectory(optim::AdamWOptions(), kGrads,
                   {{0.99899000002000005, -1.99898000001},
                    {0.99817696916384646, -1.9985321616242924},
                    {0.9978226336486633, -1.9984321172631498}});
}

TEST_CASE("AdamW with custom betas, eps and weight decay", "[optim][adamw]") {
  check_trajectory(optim::AdamWOptions(0.1).betas({0.8, 0.9}).eps(1e-3).weight_decay(0.1), kGrads,
                   {{0.89019960079840321, -1.8800999000999001},
                    {0.80253732794710231, -1.8228702208912351},
                    {0.76769357422573925, -1.8046415186823228}});
}

TEST_CASE("AdamW with amsgrad uses the running maximum of v", "[optim][adamw]") {
  auto options = optim::AdamWOptions(0.1).betas({0.5, 0.5}).weight_decay(0.0);
  // Without amsgrad (the same gradients), for contrast: the steps grow as v decays.
  check_trajectory(options, kDecayingGrads,
                   {{0.90000000033333327, -1.9000000002499999},
                    {0.83848428483939708, -1.848167894938999},
                    {0.79771030646649632, -1.8134834963868671},
                    {0.74139917515636999, -1.8154265550652522}});
  check_trajectory(optim::AdamWOptions(options).amsgrad(true), kDecayingGrads,
                   {{0.90000000033333327, -1.9000000002499999},
                    {0.85645351619496568, -1.8632576542207522},
                    {0.83604343474246745, -1.8458712885198276},
                    {0.81401281641892631, -1.8466015852606679}});
}

TEST_CASE("AdamW with maximize ascends", "[optim][adamw]") {
  check_trajectory(optim::AdamWOptions(0.01).weight_decay(0.0).maximize(true), kGrads,
                   {{1.0099999998, -2.0099999999000002},
                    {1.0180304093615349, -2.0142784857570777},
                    {1.0214739468164511, -2.0150790761523418}});
}

TEST_CASE("AdamW on float32 parameters matches the float64 trajectory to float precision", "[optim][adamw]") {
  check_trajectory(optim::AdamWOptions(0.1).betas({0.8, 0.9}).eps(1e-3).weight_decay(0.1), kGrads,
                   {{0.89019960079840321, -1.8800999000999001},
                    {0.80253732794710231, -1.8228702208912351},
                    {0.76769357422573925, -1.8046415186823228}},
                   kFloat, 1e-6);
}

TEST_CASE("AdamW keeps step, exp_avg and exp_avg_sq per parameter", "[optim][adamw]") {
  Tensor p = from_vector({1.0, -2.0}, {2}, kDouble).requires_grad_(true);
  Tensor unused = zeros({3}, kDouble).requires_grad_(true);
  optim::AdamW opt({p, unused}, optim::AdamWOptions(0.1).betas({0.5, 0.75}).amsgrad(true));
  CHECK(opt.state(p) == nullptr);
  p.set_grad(from_vector({2.0, -4.0}, {2}, kDouble));
  opt.step();
  p.set_grad(from_vector({1.0, 0.0}, {2}, kDouble));
  opt.step();
  const optim::AdamWParamState* s = opt.state(p);
  REQUIRE(s != nullptr);
  CHECK(s->step == 2);
  // m = 0.5 * (0.5 g1) + 0.5 g2;  v = 0.75 * (0.25 g1^2) + 0.25 g2^2;  vmax = max(0.25 g1^2, v)
  check_values(s->exp_avg, {1.0, -1.0});
  check_values(s->exp_avg_sq, {1.0, 3.0});
  check_values(s->max_exp_avg_sq, {1.0, 4.0});
  CHECK(opt.state(unused) == nullptr);  // no gradient, no state
  CHECK(p.is_leaf());
  CHECK(p.grad_fn() == nullptr);
}

TEST_CASE("AdamW's update runs through the dispatcher with PyTorch's in-place ops", "[optim][adamw]") {
  Tensor p = from_vector({1.0, -2.0}, {2}, kDouble).requires_grad_(true);
  optim::AdamW opt({p});
  p.set_grad(from_vector({0.5, -1.0}, {2}, kDouble));
  auto counter = std::make_shared<remat::testing::OpCounter>();
  {
    DispatchModeGuard guard(counter);
    opt.step();
  }
  CHECK(counter->count("aten::lerp_.Scalar") == 1);
  CHECK(counter->count("aten::addcmul_") == 1);
  CHECK(counter->count("aten::addcdiv_") == 1);
  CHECK(counter->count("aten::sqrt") == 1);
}

TEST_CASE("AdamW rejects bad hyperparameters with PyTorch's messages", "[optim][adamw]") {
  Tensor p = zeros({2}, kDouble).requires_grad_(true);
  REQUIRE_THROWS_WITH(optim::AdamW({p}, optim::AdamWOptions(-1)), Contains("Invalid learning rate: -1"));
  REQUIRE_THROWS_WITH(optim::AdamW({p}, optim::AdamWOptions().eps(-1e-8)), Contains("Invalid epsilon value: -1e-08"));
  REQUIRE_THROWS_WITH(optim::AdamW({p}, optim::AdamWOptions().betas({1.0, 0.999})),
                      Contains("Invalid beta parameter at index 0: 1"));
  REQUIRE_THROWS_WITH(optim::AdamW({p}, optim::AdamWOptions().betas({0.9, -0.1})),
                      Contains("Invalid beta parameter at index 1: -0.1"));
  REQUIRE_THROWS_WITH(optim::AdamW({p}, optim::AdamWOptions().weight_decay(-0.5)),
                      Contains("Invalid weight_decay value: -0.5"));
  REQUIRE_THROWS_WITH(optim::AdamW(std::vector<Tensor>{}), Contains("optimizer got an empty parameter list"));
}

TEST_CASE("AdamW with fused(true) follows the same rule in one op per parameter", "[optim][adamw]") {
  optim::AdamWOptions o;
  CHECK_FALSE(o.fused());  // PyTorch's default on CPU
  // The trajectories above, in double (to 1e-13) and float, through _fused_adamw_.
  check_trajectory(optim::AdamWOptions().fused(true), kGrads,
                   {{0.99899000002000005, -1.99898000001},
                    {0.99817696916384646, -1.9985321616242924},
                    {0.9978226336486633, -1.9984321172631498}});
  check_trajectory(optim::AdamWOptions(0.01).weight_decay(0.0).maximize(true).fused(true), kGrads,
                   {{1.0099999998, -2.0099999999000002},
                    {1.0180304093615349, -2.0142784857570777},
                    {1.0214739468164511, -2.0150790761523418}});
  check_trajectory(optim::AdamWOptions(0.1).betas({0.8, 0.9}).eps(1e-3).weight_decay(0.1).fused(true), kGrads,
                   {{0.89019960079840321, -1.8800999000999001},
                    {0.80253732794710231, -1.8228702208912351},
                    {0.76769357422573925, -1.8046415186823228}},
                   kFloat, 1e-6);
  // amsgrad has no fused form here: the op sequence runs (same trajectory as above).
  check_trajectory(optim::AdamWOptions(0.1).betas({0.5, 0.5}).weight_decay(0.0).amsgrad(true).fused(true),
                   kDecayingGrads,
                   {{0.90000000033333327, -1.9000000002499999},
                    {0.85645351619496568, -1.8632576542207522},
                    {0.83604343474246745, -1.8458712885198276},
                    {0.81401281641892631, -1.8466015852606679}});
  // One dispatched op per parameter and step.
  Tensor p = from_vector({1.0, -2.0}, {2}, kFloat).requires_grad_(true);
  optim::AdamW opt({p}, optim::AdamWOptions().fused(true));
  p.set_grad(from_vector({0.5, -1.0}, {2}, kFloat));
  const int64_t v0 = p._version();
  opt.step();
  CHECK(p._version() == v0 + 1);
  CHECK(opt.state(p)->step == 1);
  CHECK(opt.state(p)->exp_avg._version() == 1);
}

TEST_CASE("AdamW(fused) in a dry run takes the path of the device it counts like", "[optim][adamw]") {
  // Allocations in a second step (the first makes the moments): none for the fused op, the op
  // sequence's temporaries otherwise. On CUDA the fused op takes Float and Double, not BFloat16.
  auto second_step_events = [](DeviceType imitated, ScalarType dtype) {
    DryRun dry(imitated);
    Tensor p = empty({1000}, TensorOptions().dtype(dtype).device(kMeta)).requires_grad_(true);
    optim::AdamW opt({p}, optim::AdamWOptions(1e-3).fused(true));
    sum(mul(p, p)).backward();
    opt.step();
    MemoryTracker tracker(Device{kMeta});
    opt.step();
    return tracker.timeline().size();
  };
  CHECK(second_step_events(kCPU, kFloat) == 0);
  CHECK(second_step_events(kCPU, kBFloat16) == 0);
  CHECK(second_step_events(kCUDA, kFloat) == 0);
  CHECK(second_step_events(kCUDA, kBFloat16) > 0);
}
