// Tests the CUDA kernels of ops/fused_optimizer_defs.h: every Def has one, they raise the CPU
// kernels' errors and, for what CUDA alone refuses, a dry run counting like CUDA's; and a Meta dry
// run counting like CUDA allocates what they allocate, event by event (the gradient's copy,
// fused_optimizer_grad).
#include <catch2/catch.hpp>

#include <string>

#include "ops/fused_optimizer_defs.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/fused_optimizer_cases.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every Def of ops/fused_optimizer_defs.h has a CUDA kernel", "[cuda][fused][structured]") {
  CHECK(check_defs_registered([](const auto& f) { ops::for_each_fused_optimizer_def(f); }, {DispatchKey::CUDA}) == 2);
}

TEST_CASE("the fused optimizers' CUDA kernels raise the CPU kernels' errors, and Meta counting like CUDA theirs",
          "[cuda][fused][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  auto adamw = [](Device d, ScalarType dtype, int64_t numel_of_grad, bool maximize) {
    Tensor p = on(d, {3}, dtype), m = on(d, {3}, dtype), v = on(d, {3}, dtype);
    _fused_adamw_(p, m, v, on(d, {numel_of_grad}, dtype), 1e-3, 0.9, 0.999, 0.0, 1e-8, 1, maximize);
  };
  const std::string on_cpu = error_of([&] { adamw(Device{kCPU}, kFloat, 4, false); });
  CHECK_THAT(on_cpu, Catch::StartsWith("aten::_fused_adamw_: expected grad to match"));
  CHECK(error_of([&] { adamw(cuda0(), kFloat, 4, false); }) == on_cpu);
  const auto sgd = [](Device d) {
    Tensor p = on(d, {3});
    _fused_sgd_(p, on(d, {3}), Tensor(), 0.0, 0.9, 0.1, 0.0, false, false, false);
  };
  const std::string sgd_on_cpu = error_of([&] { sgd(Device{kCPU}); });
  CHECK_THAT(sgd_on_cpu, Catch::StartsWith("aten::_fused_sgd_"));
  CHECK(error_of([&] { sgd(cuda0()); }) == sgd_on_cpu);
  for (auto [dtype, maximize] : {std::pair{kBFloat16, false}, std::pair{kFloat, true}}) {
    const std::string on_cuda = error_of([&] { adamw(cuda0(), dtype, 3, maximize); });
    CHECK_THAT(on_cuda, Catch::StartsWith("aten::_fused_adamw_") && Catch::Contains("not supported on CUDA"));
    DryRun dry(kCUDA);
    CHECK(error_of([&] { adamw(Device{kMeta}, dtype, 3, maximize); }) == on_cuda);
  }
}

TEST_CASE("a Meta dry run counting like CUDA allocates what the CUDA fused optimizers allocate, event by event",
          "[cuda][fused][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  check_meta_allocates_as(cuda0(), fused_optimizer_cases());
}
