// Tests engine/core/cuda_hooks.{h,cpp}: the hooks interface the core uses to ask about CUDA.
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

TEST_CASE("cuda_is_available agrees with the device count", "[cuda_hooks]") {
  REQUIRE(cuda_is_available() == (cuda_device_count() > 0));
  REQUIRE(cuda_device_count() >= 0);
#ifndef REMAT_CUDA
  // Built without CUDA: the default hooks say "not available" and synchronize does nothing.
  REQUIRE_FALSE(cuda_is_available());
  REQUIRE(cuda_device_count() == 0);
  REQUIRE_NOTHROW(cuda_synchronize());
#endif
}

TEST_CASE("installed hooks replace the default and can be restored", "[cuda_hooks]") {
  struct FakeHooks : CUDAHooksInterface {
    bool is_available() const override { return true; }
    int64_t device_count() const override { return 3; }
  };
  static FakeHooks fake;
  const CUDAHooksInterface* previous = set_cuda_hooks(&fake);
  CHECK(cuda_is_available());
  CHECK(cuda_device_count() == 3);
  set_cuda_hooks(previous);
  REQUIRE(&cuda_hooks() != &fake);
}

TEST_CASE("without CUDA, a CUDA tensor cannot be allocated", "[cuda_hooks]") {
  if (cuda_is_available()) {
    WARN("a CUDA device is present: this case checks the build without one");
    return;
  }
  // Without the CUDA build there is no kCUDA allocator; with it but no device, the allocator
  // says CUDA is not available. Either way the error names the device.
  REQUIRE_THROWS_WITH(empty({2}, Device(kCUDA)), Catch::Contains("cuda:0"));
}
