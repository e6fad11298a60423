// Tests the CUDA kernels of ops/factory_defs.h: uniform_ and normal_ have them, they raise the CPU
// kernels' errors, and a Meta dry run counting like CUDA allocates what they allocate, event by
// event (a strided self's contiguous buffer included).
#include <catch2/catch.hpp>

#include <string>

#include "ops/factory_defs.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/factory_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/factory_defs.h has a CUDA kernel", "[cuda][factory][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_factory_def(f); }, {DispatchKey::CUDA}) == 2);
}

TEST_CASE("the random fills' CUDA kernels raise the CPU kernels' errors", "[cuda][factory][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const auto call = [](Device d) { Tensor t = on(d, {3}); uniform_(t, 2.0, 1.0, nullptr); };
  const std::string on_cpu = error_of([&] { call(Device{kCPU}); });
  CHECK_THAT(on_cpu, Catch::StartsWith("aten::uniform_"));
  CHECK(error_of([&] { call(cuda0()); }) == on_cpu);
}

TEST_CASE("a Meta dry run counting like CUDA allocates what the CUDA random fills allocate, event by event",
          "[cuda][factory][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_meta_allocates_as(cuda0(), factory_cases());
}
