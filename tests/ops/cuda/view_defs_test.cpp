// Tests ops/view_defs.h on CUDA: the views' one kernel raises the CPU's errors on a CUDA tensor,
// and a Meta dry run counting like CUDA allocates what the CUDA views allocate (nothing, or a
// reshape's copy), event by event.
#include <catch2/catch.hpp>

#include <string>

#include "ops/view_defs.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/structured_defs.h"
#include "tests/testing/view_cases.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/view_defs.h has a CUDA kernel", "[cuda][views][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_view_def(f); }, {DispatchKey::CUDA}) == 21);
}

TEST_CASE("the views raise the CPU's errors on CUDA tensors", "[cuda][views][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (const ViewErrorCase& c : view_error_cases()) {
    INFO(c.what);
    const std::string on_cpu = error_of([&] { c.run(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::StartsWith(c.op));
    CHECK(error_of([&] { c.run(cuda0()); }) == on_cpu);
  }
}

TEST_CASE("a Meta dry run counting like CUDA allocates what the CUDA views allocate, event by event",
          "[cuda][views][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_meta_allocates_as(cuda0(), view_cases());
}
