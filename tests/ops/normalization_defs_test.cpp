// Tests ops/normalization_defs.h and ops/norm_buffers.h: native_layer_norm, _fused_rms_norm and
// their backward kernels get their schemas from their Defs and have CPU and Meta kernels; the
// Meta kernels raise the CPU kernels' errors; and a Meta dry run allocates what the CPU kernels
// allocate, event by event, from the templates they run (the Float accumulators of BFloat16
// parameters' gradients, which the Meta kernels once left out, included).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ops/normalization_defs.h"
#include "remat.h"
#include "tests/testing/normalization_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/normalization_defs.h has its schema and CPU and Meta kernels", "[normalization][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_normalization_def(f); },
                              {DispatchKey::CPU, DispatchKey::Meta, DispatchKey::Autograd}) == 4);
}

TEST_CASE("the normalizations' Meta kernels raise the CPU kernels' errors, naming the op", "[normalization][structured]") {
  struct Case {
    const char* what;
    const char* op;
    std::function<void(Device)> run;
  };
  const std::vector<Case> cases = {
      {"a normalized_shape the input does not end with", "aten::native_layer_norm",
       [](Device d) { native_layer_norm(on(d, {4, 6}), {5}, Tensor(), Tensor(), 1e-5); }},
      {"a weight of another shape", "aten::_fused_rms_norm", [](Device d) { _fused_rms_norm(on(d, {4, 6}), {6}, on(d, {5}), 1e-6); }},
      {"an integer input", "aten::native_layer_norm",
       [](Device d) { native_layer_norm(on(d, {4, 6}, kLong), {6}, Tensor(), Tensor(), 1e-5); }},
      {"statistics of the wrong size", "aten::native_layer_norm_backward",
       [](Device d) {
         native_layer_norm_backward(on(d, {4, 6}), on(d, {4, 6}), {6}, on(d, {3, 1}), on(d, {4, 1}), Tensor(), Tensor());
       }},
      {"grad_out of another shape", "aten::_fused_rms_norm_backward",
       [](Device d) { _fused_rms_norm_backward(on(d, {4, 5}), on(d, {4, 6}), {6}, on(d, {4, 1}), Tensor()); }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string on_cpu = error_of([&] { c.run(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::StartsWith(c.op));
    CHECK(error_of([&] { c.run(Device{kMeta}); }) == on_cpu);
  }
}

TEST_CASE("a Meta dry run counting like the CPU allocates what the CPU normalizations allocate, event by event",
          "[normalization][structured]") {
  check_meta_allocates_as(Device{kCPU}, normalization_cases());
}
