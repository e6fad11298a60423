// Tests the CUDA kernels of ops/softmax_defs.h: every Def has one, they raise the CPU kernels'
// errors, and a Meta dry run counting like CUDA allocates what they allocate, event by event (the
// contiguous copies _masked_softmax's kernels read strided operands through).
#include <catch2/catch.hpp>

#include <string>

#include "ops/softmax_defs.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/softmax_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/softmax_defs.h has a CUDA kernel", "[cuda][softmax][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_softmax_def(f); }, {DispatchKey::CUDA}) == 6);
}

TEST_CASE("the masked softmax's CUDA kernels raise the CPU kernels' errors", "[cuda][softmax][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const auto call = [](Device d) { _masked_softmax(on(d, {1, 2, 4, 5}), on(d, {5, 4}, kBool), -1, 0); };
  const std::string on_cpu = error_of([&] { call(Device{kCPU}); });
  CHECK_THAT(on_cpu, Catch::StartsWith("aten::_masked_softmax"));
  CHECK(error_of([&] { call(cuda0()); }) == on_cpu);
}

TEST_CASE("a Meta dry run counting like CUDA allocates what the CUDA softmax kernels allocate, event by event",
          "[cuda][softmax][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_meta_allocates_as(cuda0(), softmax_cases());
}
