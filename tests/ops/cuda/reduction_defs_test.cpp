// Tests the CUDA kernels of ops/reduction_defs.h: every Def has one, they run the Def's meta
// function (every error is the CPU kernel's, word for word), and a Meta dry run counting like
// CUDA makes the CUDA reduction's copies and workspace from the template the CUDA kernel runs
// (cuda_temporaries::reduce_input), event by event.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ops/reduction_defs.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/reduction_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/reduction_defs.h has a CUDA kernel", "[cuda][reduction][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_reduction_def(f); }, {DispatchKey::CUDA}) == 3);
}

TEST_CASE("the reductions' CUDA kernels raise the CPU kernels' errors", "[cuda][reduction][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const std::vector<std::function<Tensor(Device)>> calls = {
      [](Device d) { return amax(on(d, {0, 3}), 1, false); },
      [](Device d) { return mean(on(d, {2, 3}, kLong), Shape{0}, false); },
      [](Device d) { return sum(on(d, {2, 3}), Shape{1, -1}, false); },
  };
  for (const auto& call : calls) {
    const std::string on_cpu = error_of([&] { call(Device{kCPU}); });
    CHECK_FALSE(on_cpu.empty());
    CHECK(error_of([&] { call(cuda0()); }) == on_cpu);
  }
}

TEST_CASE("a Meta dry run counting like CUDA makes the CUDA reduction's temporaries, event by event",
          "[cuda][reduction][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_meta_allocates_as(cuda0(), reduction_cases());
}
