// Tests ops/cuda/fused_sgd.cpp (aten::_fused_sgd_ on CUDA, kernels/cuda/sgd.cu): the CPU op's bits
// in Float, Double and BFloat16 under every option, the first step's unread buffer, strided
// gradients, its errors, and that optim::SGD with fused(true) runs it on CUDA with no temporaries
// and the single-tensor path's bits.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/op_counter.h"
#include "tests/testing/sgd_configs.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {

using Config = SGDConfig;
const std::vector<Config>& kConfigs = kSGDConfigs;


}  // namespace

TEST_CASE("_fused_sgd_ on CUDA: the CPU op's bits, three steps, every dtype and option", "[fused_sgd][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (const Config& c : kConfigs) {
    for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
      for (int64_t n : {int64_t{1}, int64_t{70001}}) {
        INFO(toString(dt) << ", " << n << " elements, momentum " << c.momentum << " nesterov " << c.nesterov
                          << " maximize " << c.maximize);
        Tensor p = random_cpu({n}, dt, 81), pc = p.to(cuda0());
        Tensor buf = c.momentum != 0 ? empty({n}, TensorOptions().dtype(dt)) : Tensor();
        Tensor bufc = c.momentum != 0 ? empty({n}, TensorOptions().dtype(dt).device(cuda0())) : Tensor();
        for (int64_t k = 1; k <= 3; ++k) {
          // The third step's gradient is strided (every other element of a longer vector).
          Tensor g = k < 3 ? random_cpu({n}, dt, 90 + static_cast<uint64_t>(k))
                           : slice(random_cpu({2 * n}, dt, 93), 0, 0, 2 * n, 2);
          fused_sgd_step(p, g, buf, c, k == 1);
          fused_sgd_step(pc, g.to(cuda0()), bufc, c, k == 1);
        }
        CHECK(equal(pc.to(Device{kCPU}), p));  // each product and sum rounded once, as on the CPU
        if (buf.defined()) CHECK(equal(bufc.to(Device{kCPU}), buf));
      }
    }
  }
}

TEST_CASE("_fused_sgd_ on CUDA: the first step writes the buffer without reading it", "[fused_sgd][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Config c{0.0, 0.9, 0.1, 0.0, false, false};
  Tensor p = from_vector({1, -2}, {2}).to(cuda0()), buf = from_vector({nan, nan}, {2}).to(cuda0());
  fused_sgd_step(p, from_vector({0.5, -1}, {2}).to(cuda0()), buf, c, /*first=*/true);
  CHECK(buf.to_vector() == std::vector<double>{0.5, -1});  // the NaNs unread
  CHECK(compare(p.to_vector(), {0.95, -1.9}, kF32Elementwise) == "");
  CHECK(p._version() == 1);
  CHECK(buf._version() == 1);
}

TEST_CASE("_fused_sgd_ on CUDA: errors name the op and the values", "[fused_sgd][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Config mom{0.0, 0.9, 0.1, 0.0, false, false};
  const TensorOptions f = TensorOptions().device(cuda0());
  Tensor a = zeros({3}, f), b = zeros({3}, f);
  REQUIRE_THROWS_WITH(fused_sgd_step(a, zeros({4}, f), b, mom, false),
                      "aten::_fused_sgd_: expected grad to match the parameter ([3], Float), but got [4], Float");
  REQUIRE_THROWS_WITH(fused_sgd_step(a, zeros({3}, f), Tensor(), mom, false),
                      "aten::_fused_sgd_: momentum is 0.9 but momentum_buffer is None");
  REQUIRE_THROWS_WITH(fused_sgd_step(a, zeros({3}), b, mom, false),
                      "aten::_fused_sgd_: Expected all tensors to be on the same device, but found at least two "
                      "devices, cuda:0 and cpu!");
  Tensor h = zeros({3}, TensorOptions().dtype(kHalf).device(cuda0()));
  REQUIRE_THROWS_WITH(fused_sgd_step(h, h, Tensor(), {0.0, 0.0, 0.1, 0.0, false, false}, false),
                      "aten::_fused_sgd_: expected a Float, Double or BFloat16 parameter, but got Half");
}

TEST_CASE("SGD with fused(true) runs _fused_sgd_ on CUDA: no temporaries, the single-tensor path's bits",
          "[fused_sgd][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dt : {kFloat, kDouble}) {
    INFO(toString(dt));
    const optim::SGDOptions options = optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.1).nesterov(true);
    Tensor init = random_cpu({257}, dt, 7);
    Tensor w_fused = init.to(cuda0()).requires_grad_(true), w_plain = init.to(cuda0()).requires_grad_(true);
    optim::SGD fused({w_fused}, optim::SGDOptions(options).fused(true));
    optim::SGD plain({w_plain}, optim::SGDOptions(options).fused(false));
    for (int k = 1; k <= 3; ++k) {
      Tensor g = random_cpu({257}, dt, 20 + static_cast<uint64_t>(k)).to(cuda0());
      w_fused.set_grad(g.clone());
      w_plain.set_grad(g.clone());
      auto counter = std::make_shared<OpCounter>();
      size_t events = 0;
      {
        MemoryTracker tracker(cuda0());
        DispatchModeGuard guard(counter);
        fused.step();
        events = tracker.timeline().size();
      }
      CHECK(counter->count("aten::_fused_sgd_") == 1);
      if (k > 1) CHECK(events == 0);  // one op, in place (the first step makes the buffer)
      plain.step();
      CHECK(equal(w_fused.to(Device{kCPU}), w_plain.to(Device{kCPU})));
      CHECK(equal(fused.momentum_buffer(w_fused).to(Device{kCPU}), plain.momentum_buffer(w_plain).to(Device{kCPU})));
    }
  }
}
