// Tests ops/view_defs.h: every view op gets its schema from its Def and its one kernel at the
// CPU, CUDA and Meta keys (or its composite); the Meta kernels raise the CPU kernels' errors; a
// view allocates nothing on the CPU or in a Meta dry run, and a reshape that copies allocates
// the same on both.
#include <catch2/catch.hpp>

#include <string>

#include "ops/view_defs.h"
#include "remat.h"
#include "tests/testing/structured_defs.h"
#include "tests/testing/view_cases.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/view_defs.h has its schema and a kernel at every backend", "[views][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_view_def(f); },
                              {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::Meta}) == 21);
}

TEST_CASE("a view's Def registers its one kernel for every backend, a composite's at Autograd too", "[views][structured]") {
  int kernels = 0;
  ops::for_each_view_def([&](auto def) {
    using Def = typename decltype(def)::type;
    INFO(Def::name);
    const OperatorHandle op = find_op(Def::name);
    if constexpr (ops::HasViewKernel<Def>::value) {
      ++kernels;
    } else {
      CHECK(op.entry()->hasKernelForKey(DispatchKey::Autograd));
      CHECK(op.entry()->hasKernelForKey(DispatchKey::Python));
    }
  });
  CHECK(kernels == 17);
}

TEST_CASE("the views' Meta kernels raise the CPU kernels' errors, naming the op", "[views][structured]") {
  for (const ViewErrorCase& c : view_error_cases()) {
    INFO(c.what);
    const std::string on_cpu = error_of([&] { c.run(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::StartsWith(c.op));
    CHECK(error_of([&] { c.run(Device{kMeta}); }) == on_cpu);
  }
}

TEST_CASE("a Meta dry run counting like the CPU allocates what the CPU views allocate, event by event",
          "[views][structured]") {
  check_meta_allocates_as(Device{kCPU}, view_cases());
  // a view alone allocates nothing
  const Tensor t = on(Device{kCPU}, {6, 4});
  CHECK(allocation_deltas(Device{kCPU}, kCPU, [&](Device) { Tensor v = transpose(view(t, {4, 6}), 0, 1); }).empty());
}
