// Tests engine/cuda/cuda_event.{h,cpp}.
#include <catch2/catch.hpp>

#include "engine/cuda/cuda_event.h"
#include "engine/cuda/cuda_guard.h"
#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;

TEST_CASE("an event never recorded is complete; timing needs enable_timing and two records", "[cuda_event]") {
  cuda::CUDAEvent e;
  CHECK_FALSE(e.is_created());
  CHECK(e.query());
  REQUIRE_NOTHROW(e.synchronize());
  cuda::CUDAEvent f;
  REQUIRE_THROWS_WITH(e.elapsed_time(f), Catch::Contains("enable_timing=true"));
  cuda::CUDAEvent t0(true), t1(true);
  REQUIRE_THROWS_WITH(t0.elapsed_time(t1), Catch::Contains("must be recorded"));
}

TEST_CASE("events order work across streams and time it", "[cuda_event][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device d = testing::cuda0();
  cuda::CUDAStream side = cuda::getStreamFromPool(false, 0);
  cuda::CUDAEvent start(true), stop(true), produced;
  Tensor x = full({1 << 20}, 2.0, TensorOptions().device(d));
  start.record();
  Tensor y = mul(x, x);  // default stream
  produced.record();
  stop.record();
  produced.block(side);  // the side stream waits for y
  Tensor z;
  {
    cuda::CUDAStreamGuard guard(side);
    z = add(y, 1.0);
  }
  side.synchronize();
  CHECK(produced.query());
  CHECK(z.amax(0).item() == 5.0);
  stop.synchronize();
  CHECK(start.elapsed_time(stop) >= 0.0f);
  cuda::CUDAEvent moved(std::move(start));
  CHECK(moved.is_created());
  CHECK_FALSE(start.is_created());
}
