// Tests ops/embedding_defs.h: embedding and embedding_dense_backward get their schemas from their
// Defs and have CPU and Meta kernels; the Meta kernels raise the CPU kernels' errors; and a Meta
// dry run allocates what the CPU kernels allocate, event by event, from the templates they run
// (the contiguous copies of strided operands and the Float table a 16-bit gradient accumulates
// in, which the Meta kernels once left out).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ops/embedding_defs.h"
#include "remat.h"
#include "tests/testing/embedding_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/embedding_defs.h has its schema and CPU and Meta kernels", "[embedding][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_embedding_def(f); },
                              {DispatchKey::CPU, DispatchKey::Meta, DispatchKey::Autograd}) == 2);
}

TEST_CASE("embedding's Meta kernels raise the CPU kernels' errors, naming the op", "[embedding][structured]") {
  struct Case {
    const char* what;
    const char* op;
    std::function<void(Device)> run;
  };
  const std::vector<Case> cases = {
      {"a 1-D weight", "aten::embedding", [](Device d) { embedding(on(d, {10}), on(d, {3}, kLong)); }},
      {"an undefined weight", "aten::embedding", [](Device d) { embedding(Tensor(), on(d, {3}, kLong)); }},
      {"a gradient of another shape", "aten::embedding_dense_backward",
       [](Device d) { embedding_dense_backward(on(d, {2, 4}), on(d, {3}, kLong), 10); }},
      {"a negative num_weights", "aten::embedding_dense_backward",
       [](Device d) { embedding_dense_backward(on(d, {3, 4}), on(d, {3}, kLong), -1); }},
      {"an integer gradient", "aten::embedding_dense_backward",
       [](Device d) { embedding_dense_backward(on(d, {3, 4}, kLong), on(d, {3}, kLong), 10); }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string on_cpu = error_of([&] { c.run(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::StartsWith(c.op));
    CHECK(error_of([&] { c.run(Device{kMeta}); }) == on_cpu);
  }
}

TEST_CASE("embedding's CPU kernels check the indices even when the output is empty", "[embedding][structured]") {
  // the Defs run their kernels on an empty output
  const Tensor idx = from_vector({12}, {1}, kLong);
  CHECK_THAT(error_of([&] { embedding(zeros({10, 0}), idx); }),
             Catch::StartsWith("aten::embedding: index out of range in self: index 12 (at position 0)"));
  CHECK_THAT(error_of([&] { embedding_dense_backward(zeros({1, 0}), idx, 10); }),
             Catch::StartsWith("aten::embedding_dense_backward: index out of range in self: index 12"));
}

TEST_CASE("a Meta dry run counting like the CPU allocates what the CPU embedding kernels allocate, event by event",
          "[embedding][structured]") {
  check_meta_allocates_as(Device{kCPU}, embedding_cases());
}
