// Tests the CUDA kernels of ops/dropout_defs.h: every Def has one, they raise the CPU kernels'
// errors, native_dropout reserves one offset per call on an empty input too, and a Meta dry run
// counting like CUDA allocates what they allocate, event by event, from the templates of
// ops/dropout_defs.h they run (the output before the mask, and a strided input's contiguous
// copy, which the Meta kernel once got wrong or left out).
#include <catch2/catch.hpp>

#include <string>

#include "ops/dropout_defs.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/dropout_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/dropout_defs.h has a CUDA kernel", "[cuda][dropout][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_dropout_def(f); }, {DispatchKey::CUDA}) == 2);
}

TEST_CASE("dropout's CUDA kernels raise the CPU kernels' errors", "[cuda][dropout][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const auto call = [](Device d) { native_dropout_backward(on(d, {2, 3}), on(d, {3, 2}, kBool), 2.0); };
  const std::string on_cpu = error_of([&] { call(Device{kCPU}); });
  CHECK_THAT(on_cpu, Catch::StartsWith("aten::native_dropout_backward"));
  CHECK(error_of([&] { call(cuda0()); }) == on_cpu);
}

TEST_CASE("native_dropout on CUDA reserves one offset per call, on an empty input too", "[cuda][dropout][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Generator gen(3);
  native_dropout(on(cuda0(), {0, 4}), 0.5, &gen);
  CHECK(gen.offset() == 1);
  native_dropout(on(cuda0(), {2, 4}), 0.5, &gen);
  CHECK(gen.offset() == 2);
}

TEST_CASE("a Meta dry run counting like CUDA allocates what the CUDA dropout kernels allocate, event by event",
          "[cuda][dropout][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_meta_allocates_as(cuda0(), dropout_cases());
}
