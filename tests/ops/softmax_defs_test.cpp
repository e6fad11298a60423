// Tests ops/softmax_defs.h: softmax, log_softmax, _masked_softmax and their backward ops get their
// schemas from their Defs and have CPU and Meta kernels; the Meta kernels raise the CPU kernels'
// errors; and a Meta dry run allocates what the CPU kernels allocate, event by event (the
// contiguous copies _masked_softmax's kernels read strided operands through).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ops/softmax_defs.h"
#include "remat.h"
#include "tests/testing/softmax_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/softmax_defs.h has its schema and CPU and Meta kernels", "[softmax][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_softmax_def(f); },
                              {DispatchKey::CPU, DispatchKey::Meta, DispatchKey::Autograd}) == 6);
}

TEST_CASE("the masked softmax's Meta kernels raise the CPU kernels' errors, naming the op", "[softmax][structured]") {
  struct Case {
    const char* what;
    const char* op;
    std::function<void(Device)> run;
  };
  const std::vector<Case> cases = {
      {"a Float mask", "aten::_masked_softmax", [](Device d) { _masked_softmax(on(d, {2, 3}), on(d, {2, 3})); }},
      {"a mask of another shape", "aten::_masked_softmax",
       [](Device d) { _masked_softmax(on(d, {2, 3}), on(d, {3, 3}, kBool)); }},
      {"an [L, S] mask of other sizes", "aten::_masked_softmax",
       [](Device d) { _masked_softmax(on(d, {1, 2, 4, 5}), on(d, {5, 4}, kBool), -1, 0); }},
      {"a padding mask", "aten::_masked_softmax",
       [](Device d) { _masked_softmax(on(d, {1, 2, 4, 5}), on(d, {1, 5}, kBool), -1, 1); }},
      {"a dim other than the last", "aten::_masked_softmax",
       [](Device d) { _masked_softmax(on(d, {2, 3}), on(d, {2, 3}, kBool), 0); }},
      {"a Long input", "aten::_masked_softmax",
       [](Device d) { _masked_softmax(on(d, {2, 3}, kLong), on(d, {2, 3}, kBool)); }},
      {"a backward mask of another shape", "aten::_masked_softmax_backward",
       [](Device d) { _masked_softmax_backward(on(d, {2, 3}), on(d, {2, 3}), on(d, {3}, kBool)); }},
      {"a backward of mismatched grad and output", "aten::_masked_softmax_backward",
       [](Device d) { _masked_softmax_backward(on(d, {2, 3}), on(d, {3, 2}), on(d, {2, 3}, kBool)); }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string on_cpu = error_of([&] { c.run(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::StartsWith(c.op));
    CHECK(error_of([&] { c.run(Device{kMeta}); }) == on_cpu);
  }
}

TEST_CASE("a Meta dry run counting like the CPU allocates what the CPU softmax kernels allocate, event by event",
          "[softmax][structured]") {
  check_meta_allocates_as(Device{kCPU}, softmax_cases());
}
