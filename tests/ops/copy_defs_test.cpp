// Tests ops/copy_defs.h: zero_, fill_, copy_, clone, contiguous, _to_copy, cat, triu, zeros_like,
// ones_like and slice_backward get their schemas and their CPU and Meta kernels from their Defs;
// the Meta kernels raise the CPU kernels' errors (slice_backward's dim out of range too, which
// the Meta kernel once accepted); and a Meta dry run allocates what the CPU kernels allocate,
// event by event.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ops/copy_defs.h"
#include "remat.h"
#include "tests/testing/copy_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/copy_defs.h has its schema and CPU and Meta kernels", "[copy][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_copy_def(f); },
                              {DispatchKey::CPU, DispatchKey::Meta, DispatchKey::Autograd}) == 11);
}

TEST_CASE("the copies' Meta kernels raise the CPU kernels' errors, naming the op", "[copy][structured]") {
  struct Case {
    const char* what;
    const char* op;
    std::function<void(Device)> run;
  };
  const std::vector<Case> cases = {
      {"triu of a vector", "aten::triu", [](Device d) { triu(on(d, {3}), 0); }},
      {"cat of tensors of other sizes", "aten::cat", [](Device d) { cat({on(d, {2, 3}), on(d, {2, 4})}, 0); }},
      {"cat over a dim out of range", "aten::cat", [](Device d) { cat({on(d, {2, 3}), on(d, {2, 3})}, 2); }},
      {"copy_ of a source that does not broadcast", "aten::copy_", [](Device d) { on(d, {3}).copy_(on(d, {2, 3})); }},
      {"copy_ into an expanded tensor", "aten::copy_",
       [](Device d) { expand(on(d, {1, 3}), {2, 3}).copy_(on(d, {2, 3})); }},
      {"slice_backward over a dim out of range", "aten::slice_backward",
       [](Device d) { slice_backward(on(d, {2, 2}), {2, 4}, 2, 0, 4, 2); }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string on_cpu = error_of([&] { c.run(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::StartsWith(c.op));
    CHECK(error_of([&] { c.run(Device{kMeta}); }) == on_cpu);
  }
}

TEST_CASE("a Meta dry run counting like the CPU allocates what the CPU copies allocate, event by event",
          "[copy][structured]") {
  check_meta_allocates_as(Device{kCPU}, copy_cases());
}

TEST_CASE("_to_copy to a Meta device stages nothing on the CPU", "[copy][structured]") {
  const Tensor t = on(Device{kCPU}, {6, 4});
  const auto to_meta = [&](Device) { Tensor m = _to_copy(t, kBFloat16, Device{kMeta}); };
  CHECK(allocation_deltas(Device{kCPU}, kCPU, to_meta).empty());
}
