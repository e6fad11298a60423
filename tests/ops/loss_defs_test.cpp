// Tests ops/loss_defs.h: cross_entropy and cross_entropy_backward get their schemas from their
// Defs and have CPU and Meta kernels; the Meta kernels raise the CPU kernels' errors; and a Meta
// dry run allocates what the CPU kernels allocate, event by event, from the templates they run
// (the contiguous copies of strided logits and targets, which the Meta kernels once left out).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ops/loss_defs.h"
#include "remat.h"
#include "tests/testing/loss_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/loss_defs.h has its schema and CPU and Meta kernels", "[loss][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_loss_def(f); },
                              {DispatchKey::CPU, DispatchKey::Meta, DispatchKey::Autograd}) == 2);
}

TEST_CASE("the loss's Meta kernels raise the CPU kernels' errors, naming the op", "[loss][structured]") {
  struct Case {
    const char* what;
    const char* op;
    std::function<void(Device)> run;
  };
  const std::vector<Case> cases = {
      {"3-D logits", "aten::cross_entropy", [](Device d) { cross_entropy(on(d, {2, 3, 4}), on(d, {2}, kLong)); }},
      {"Float targets", "aten::cross_entropy", [](Device d) { cross_entropy(on(d, {3, 4}), on(d, {3})); }},
      {"integer logits", "aten::cross_entropy", [](Device d) { cross_entropy(on(d, {3, 4}, kLong), on(d, {3}, kLong)); }},
      {"batch sizes", "aten::cross_entropy", [](Device d) { cross_entropy(on(d, {3, 4}), on(d, {2}, kLong)); }},
      {"a grad_output of two elements", "aten::cross_entropy_backward",
       [](Device d) { cross_entropy_backward(on(d, {2}), on(d, {3, 4}), on(d, {3}, kLong)); }},
      {"2-D targets in the backward", "aten::cross_entropy_backward",
       [](Device d) { cross_entropy_backward(on(d, {}), on(d, {3, 4}), on(d, {3, 1}, kLong)); }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string on_cpu = error_of([&] { c.run(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::StartsWith(c.op));
    CHECK(error_of([&] { c.run(Device{kMeta}); }) == on_cpu);
  }
}

TEST_CASE("cross_entropy_backward's CPU kernel checks the targets even when the gradient is empty",
          "[loss][structured]") {
  // no class: every target is out of range (the Def runs its kernel on an empty output)
  const Tensor logits = zeros({2, 0}), targets = from_vector({0, 0}, {2}, kLong);
  CHECK_THAT(error_of([&] { cross_entropy_backward(scalar_tensor(1.0), logits, targets); }),
             Catch::StartsWith("aten::cross_entropy_backward: Target 0 is out of bounds (at position 0"));
}

TEST_CASE("a Meta dry run counting like the CPU allocates what the CPU loss kernels allocate, event by event",
          "[loss][structured]") {
  check_meta_allocates_as(Device{kCPU}, loss_cases());
}
