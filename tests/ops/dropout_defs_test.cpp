// Tests ops/dropout_defs.h and the multi-output Variants of ops/structured.h: native_dropout and
// native_dropout_backward get their schemas from their Defs and have CPU and Meta kernels; the
// Meta kernels raise the CPU kernels' errors; native_dropout reserves one generator offset per
// call, empty or not; and a Meta dry run allocates what the CPU kernels allocate, event by event,
// from the templates they run (the output before the mask, and the contiguous copies of strided
// operands, which the Meta kernels once got wrong or left out).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ops/dropout_defs.h"
#include "remat.h"
#include "tests/testing/dropout_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/dropout_defs.h has its schema and CPU and Meta kernels", "[dropout][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_dropout_def(f); },
                              {DispatchKey::CPU, DispatchKey::Meta, DispatchKey::Autograd}) == 2);
  CHECK(find_op(ops::structured_native_dropout::name).has_tag(Tag::nondeterministic_seeded));
}

TEST_CASE("dropout's Meta kernels raise the CPU kernels' errors, naming the op", "[dropout][structured]") {
  struct Case {
    const char* what;
    const char* op;
    std::function<void(Device)> run;
  };
  const std::vector<Case> cases = {
      {"an integer input", "aten::native_dropout", [](Device d) { native_dropout(on(d, {3}, kLong), 0.5); }},
      {"p > 1", "aten::native_dropout", [](Device d) { native_dropout(on(d, {3}), 1.5); }},
      {"a Float mask", "aten::native_dropout_backward",
       [](Device d) { native_dropout_backward(on(d, {2, 3}), on(d, {2, 3}), 2.0); }},
      {"a mask of another shape", "aten::native_dropout_backward",
       [](Device d) { native_dropout_backward(on(d, {2, 3}), on(d, {3, 2}, kBool), 2.0); }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string on_cpu = error_of([&] { c.run(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::StartsWith(c.op));
    CHECK(error_of([&] { c.run(Device{kMeta}); }) == on_cpu);
  }
}

TEST_CASE("native_dropout reserves one offset of an explicit generator per call, on an empty input too, on the CPU "
          "and on Meta",
          "[dropout][structured]") {
  for (Device d : {Device{kCPU}, Device{kMeta}}) {
    INFO(toString(d.type));
    Generator gen(3);
    auto [out, mask] = native_dropout(on(d, {0, 4}), 0.5, &gen);
    CHECK(out.sizes() == Shape{0, 4});
    CHECK(mask.dtype() == kBool);
    CHECK(gen.offset() == 1);
    native_dropout(on(d, {2, 4}), 0.5, &gen);
    CHECK(gen.offset() == 2);
  }
}

TEST_CASE("a Meta dry run counting like the CPU allocates what the CPU dropout kernels allocate, event by event",
          "[dropout][structured]") {
  check_meta_allocates_as(Device{kCPU}, dropout_cases());
}
