// Tests the CUDA kernels of ops/loss_defs.h: every Def has one, they raise the CPU kernels'
// errors, and a Meta dry run counting like CUDA allocates what they allocate, event by event,
// from the templates of ops/loss_defs.h they run (the copies, the workspace and the index-error
// flag, which cuda_temporaries once imitated by hand).
#include <catch2/catch.hpp>

#include <string>

#include "ops/loss_defs.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/loss_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/loss_defs.h has a CUDA kernel", "[cuda][loss][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_loss_def(f); }, {DispatchKey::CUDA}) == 2);
}

TEST_CASE("the loss's CUDA kernels raise the CPU kernels' errors", "[cuda][loss][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const auto call = [](Device d) { cross_entropy_backward(on(d, {2}), on(d, {3, 4}), on(d, {3}, kLong)); };
  const std::string on_cpu = error_of([&] { call(Device{kCPU}); });
  CHECK_THAT(on_cpu, Catch::StartsWith("aten::cross_entropy_backward"));
  CHECK(error_of([&] { call(cuda0()); }) == on_cpu);
}

TEST_CASE("a Meta dry run counting like CUDA allocates what the CUDA loss kernels allocate, event by event",
          "[cuda][loss][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_meta_allocates_as(cuda0(), loss_cases());
}
