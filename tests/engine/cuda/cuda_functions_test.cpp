// Tests engine/cuda/cuda_functions.{h,cpp}: device count, the CUDA hooks, device checks.
#include <catch2/catch.hpp>

#include "engine/cuda/cuda_functions.h"
#include "engine/cuda/cuda_guard.h"
#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;

TEST_CASE("the CUDA build installs hooks that report the real device count", "[cuda_functions]") {
  CHECK(cuda_device_count() == cuda::device_count());
  CHECK(cuda_is_available() == cuda::is_available());
  CHECK(cuda::is_available() == cuda::unavailable_reason().empty());
}

TEST_CASE("check_device explains why a CUDA device cannot be used", "[cuda_functions]") {
  if (cuda::is_available()) {
    REQUIRE_THROWS_WITH(cuda::check_device(Device{kCUDA, static_cast<int>(cuda::device_count())}, "op"),
                        Catch::Contains("invalid device ordinal"));
    REQUIRE_NOTHROW(cuda::check_device(Device{kCUDA, 0}, "op"));
  } else {
    REQUIRE_THROWS_WITH(cuda::check_device(Device{kCUDA, 0}, "op"),
                        Catch::Contains("op: CUDA is not available on this machine"));
    REQUIRE_THROWS_WITH(empty({4}, Device(kCUDA)), Catch::Contains("CUDA is not available"));
  }
  REQUIRE_THROWS_WITH(cuda::check_device(Device{kCPU}, "op"), Catch::Contains("expected a CUDA device"));
}

TEST_CASE("CUDAGuard sets and restores the current device", "[cuda_functions][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const int before = cuda::current_device();
  {
    cuda::CUDAGuard guard(cuda::device_count() - 1);
    CHECK(cuda::current_device() == cuda::device_count() - 1);
    CHECK(guard.original_device() == before);
  }
  CHECK(cuda::current_device() == before);
  CHECK(cuda::multiprocessor_count(0) > 0);
  REQUIRE_NOTHROW(cuda::device_synchronize());
  REQUIRE_NOTHROW(cuda_synchronize(0));
}
