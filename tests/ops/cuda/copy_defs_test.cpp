// Tests the CUDA kernels of ops/copy_defs.h: every Def has one, they raise the CPU kernels'
// errors, and a Meta dry run counting like CUDA allocates what they allocate, event by event;
// _to_copy to the host stages its conversion on the device (to_copy_staging).
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "ops/copy_defs.h"
#include "remat.h"
#include "tests/testing/copy_cases.h"
#include "tests/testing/cuda.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/copy_defs.h has a CUDA kernel", "[cuda][copy][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_copy_def(f); }, {DispatchKey::CUDA}) == 11);
}

TEST_CASE("the copies' CUDA kernels raise the CPU kernels' errors", "[cuda][copy][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (const auto& call : {std::function<void(Device)>([](Device d) { triu(on(d, {3}), 0); }),
                           std::function<void(Device)>([](Device d) { slice_backward(on(d, {2, 2}), {2, 4}, -3, 0, 4, 2); }),
                           std::function<void(Device)>([](Device d) { on(d, {3}).copy_(on(d, {2, 3})); })}) {
    const std::string on_cpu = error_of([&] { call(Device{kCPU}); });
    CHECK_THAT(on_cpu, Catch::StartsWith("aten::"));
    CHECK(error_of([&] { call(cuda0()); }) == on_cpu);
  }
}

TEST_CASE("a Meta dry run counting like CUDA allocates what the CUDA copies allocate, event by event",
          "[cuda][copy][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_meta_allocates_as(cuda0(), copy_cases());
}

TEST_CASE("_to_copy to the host converts on the device first", "[cuda][copy][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Tensor t = on(cuda0(), {6, 4});
  const auto to_host = [&](Device) { Tensor h = _to_copy(t, kBFloat16, Device{kCPU}); };
  // the BFloat16 staging tensor on the device, made and freed
  const std::vector<int64_t> on_device = allocation_deltas(cuda0(), kCUDA, to_host);
  REQUIRE(on_device.size() == 2);
  CHECK(on_device[0] == -on_device[1]);
  CHECK(allocation_deltas(Device{kCPU}, kCPU, to_host).size() == 2);  // the output, made and freed
}
