// Tests the CUDA kernels of ops/normalization_defs.h: every Def has one, they raise the CPU
// kernels' errors, and a Meta dry run counting like CUDA allocates what they allocate, event by
// event, from the templates of ops/norm_buffers.h they run (the backward kernels' workspace,
// which the rms_norm backward's Meta kernel once left out, included).
#include <catch2/catch.hpp>

#include <string>

#include "ops/normalization_defs.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/normalization_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/normalization_defs.h has a CUDA kernel", "[cuda][normalization][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_normalization_def(f); }, {DispatchKey::CUDA}) == 4);
}

TEST_CASE("the normalizations' CUDA kernels raise the CPU kernels' errors", "[cuda][normalization][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const auto call = [](Device d) { native_layer_norm(on(d, {4, 6}), {5}, Tensor(), Tensor(), 1e-5); };
  const std::string on_cpu = error_of([&] { call(Device{kCPU}); });
  CHECK_THAT(on_cpu, Catch::StartsWith("aten::native_layer_norm"));
  CHECK(error_of([&] { call(cuda0()); }) == on_cpu);
}

TEST_CASE("a Meta dry run counting like CUDA allocates what the CUDA normalizations allocate, event by event",
          "[cuda][normalization][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_meta_allocates_as(cuda0(), normalization_cases());
}
