// Tests of checkpoint/checkpoint.cpp: the entry points, checkpoint_sequential and the RAII
// settings. Ported from PyTorch's test_utils.py (TestCheckpoint.test_checkpoint_sequential...).
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

TEST_CASE("checkpoint_sequential: 10 functions, 2 segments", "[checkpoint][sequential]") {
  for (bool use_reentrant : {false, true}) {
    DYNAMIC_SECTION("use_reentrant = " << use_reentrant) {
      std::vector<int> runs(10, 0);
      std::vector<std::function<Tensor(const Tensor&)>> fns;
      for (int i = 0; i < 10; ++i) {
        fns.push_back([&runs, i](const Tensor& h) {
          ++runs[static_cast<size_t>(i)];
          return (h * (1.0 + 0.1 * i)).sin();
        });
      }
      Tensor x = randn({4}).requires_grad_();
      CheckpointOptions o;
      o.use_reentrant = use_reentrant;
      checkpoint_sequential(fns, 2, x, o).sum().backward();
      for (int i = 0; i < 10; ++i) {
        INFO("function " << i);
        REQUIRE(runs[static_cast<size_t>(i)] == (i < 5 ? 2 : 1));
      }
      // Same gradient as running the functions plainly.
      Tensor g = x.grad().clone();
      x.set_grad(Tensor());
      Tensor h = x;
      for (auto& f : fns) h = f(h);
      h.sum().backward();
      REQUIRE(allclose(x.grad(), g));
    }
  }
}

TEST_CASE("checkpoint_sequential: bad segment counts", "[checkpoint][sequential]") {
  std::vector<std::function<Tensor(const Tensor&)>> fns(3, [](const Tensor& h) { return h.sin(); });
  Tensor x = randn({2}).requires_grad_();
  REQUIRE_THROWS_WITH(checkpoint_sequential(fns, 0, x), Catch::Contains("segments must be between 1 and the number of functions (3), got 0"));
  REQUIRE_THROWS_WITH(checkpoint_sequential(fns, 4, x), Catch::Contains("got 4"));
}

TEST_CASE("checkpoint rejects an empty function", "[checkpoint]") {
  Tensor x = randn({2});
  REQUIRE_THROWS_WITH(checkpoint(CheckpointFn(), {x}), Catch::Contains("the function to checkpoint is empty"));
}

TEST_CASE("CheckpointError is a remat::Error", "[checkpoint]") {
  Tensor x = randn({3}).requires_grad_();
  CheckpointOptions o;
  o.determinism_check = "bogus";
  REQUIRE_THROWS_AS(checkpoint([](const Tensor& h) { return h.sin(); }, x, o), Error);
}
