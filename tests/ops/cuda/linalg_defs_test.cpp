// Tests the CUDA kernels of ops/linalg_defs.h: every Def has one, they run the Def's meta function
// (every error is the CPU kernel's, word for word), and a Meta dry run counting like CUDA makes
// the CUDA GEMM's operand copies from the plan the CUDA kernel makes them by (ops/gemm_copies.h),
// event by event.
#include <catch2/catch.hpp>

#include <vector>

#include "ops/linalg_defs.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/linalg_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/linalg_defs.h has a CUDA kernel", "[cuda][linalg][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_linalg_def(f); }, {DispatchKey::CUDA}) == 3);
}

TEST_CASE("the matrix products' CUDA kernels raise the CPU kernels' errors", "[cuda][linalg][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (Shape b : {Shape{4, 5}, Shape{3}}) {
    INFO(str(b));
    const std::string on_cpu = error_of([&] { mm(on(Device{kCPU}, {2, 3}), on(Device{kCPU}, b)); });
    CHECK_THAT(on_cpu, Catch::StartsWith("aten::mm"));
    CHECK(error_of([&] { mm(on(cuda0(), {2, 3}), on(cuda0(), b)); }) == on_cpu);
    const std::string addmm_cpu = error_of([&] { addmm(on(Device{kCPU}, {7}), on(Device{kCPU}, {2, 3}), on(Device{kCPU}, b)); });
    CHECK(error_of([&] { addmm(on(cuda0(), {7}), on(cuda0(), {2, 3}), on(cuda0(), b)); }) == addmm_cpu);
  }
  const std::string bmm_cpu = error_of([&] { bmm(on(Device{kCPU}, {2, 3, 4}, kLong), on(Device{kCPU}, {2, 4, 5}, kLong)); });
  CHECK_THAT(bmm_cpu, Catch::StartsWith("aten::bmm") && Catch::Contains("Long"));
  CHECK(error_of([&] { bmm(on(cuda0(), {2, 3, 4}, kLong), on(cuda0(), {2, 4, 5}, kLong)); }) == bmm_cpu);
}

TEST_CASE("a Meta dry run counting like CUDA makes the CUDA GEMM's copies, event by event", "[cuda][linalg][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_meta_allocates_as(cuda0(), gemm_cases());
}
