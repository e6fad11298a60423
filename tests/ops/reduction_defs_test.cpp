// Tests ops/reduction_defs.h: sum, mean and amax get their schemas and their CPU and Meta kernels
// from their Defs, every backend runs the Def's meta function (the Meta kernel raises the CPU
// kernel's errors: amax's on an empty input too, which the Meta kernel once skipped), and a
// Meta dry run makes the CPU reduction's temporaries from the template its kernel runs (the
// converted copy of a Bool input, which the Meta kernel once left out).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ops/reduction_defs.h"
#include "remat.h"
#include "tests/testing/reduction_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/reduction_defs.h has its schema and CPU and Meta kernels", "[reduction][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_reduction_def(f); }, {DispatchKey::CPU, DispatchKey::Meta, DispatchKey::Autograd}) == 3);
}

TEST_CASE("the reductions' Meta kernels raise the CPU kernels' errors, naming the op", "[reduction][structured]") {
  struct Case {
    const char* what;
    const char* op;
    std::function<Tensor(Device)> run;
  };
  const std::vector<Case> cases = {
      {"amax of an empty tensor", "aten::amax", [](Device d) { return amax(on(d, {0, 3}), 1, false); }},
      {"amax over a dim out of range", "aten::amax", [](Device d) { return amax(on(d, {2, 3}), 2, false); }},
      {"amax of an undefined tensor", "aten::amax", [](Device) { return amax(Tensor(), 0, false); }},
      {"mean of integers", "aten::mean", [](Device d) { return mean(on(d, {2, 3}, kLong), Shape{0}, false); }},
      {"sum over a repeated dim", "aten::sum", [](Device d) { return sum(on(d, {2, 3}), Shape{1, -1}, false); }},
      {"sum over a dim out of range", "aten::sum", [](Device d) { return sum(on(d, {2, 3}), Shape{3}, false); }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string on_cpu = error_of([&] { c.run(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::Contains(c.op));
    CHECK(error_of([&] { c.run(Device{kMeta}); }) == on_cpu);
  }
}

TEST_CASE("a Meta dry run counting like the CPU makes the CPU reduction's temporaries, event by event",
          "[reduction][structured]") {
  check_meta_allocates_as(Device{kCPU}, reduction_cases());
}

TEST_CASE("the CPU sum of a Bool tensor converts it first, and the dry run counts the copy", "[reduction][structured]") {
  const Tensor flags = on(Device{kCPU}, {6, 5}, kBool), longs = on(Device{kCPU}, {6, 5}, kLong);
  const auto sum_of = [](const Tensor& t) { return [t](Device) { Tensor s = sum(t, Shape{1}, false); }; };
  // the output, the converted copy and its free; the output alone
  CHECK(allocation_deltas(Device{kCPU}, kCPU, sum_of(flags)).size() ==
        allocation_deltas(Device{kCPU}, kCPU, sum_of(longs)).size() + 2);
}
