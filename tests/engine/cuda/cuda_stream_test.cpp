// Tests engine/cuda/cuda_stream.{h,cpp} and the CUDAStreamGuard of cuda_guard.h.
#include <catch2/catch.hpp>

#include <thread>

#include "engine/cuda/cuda_guard.h"
#include "engine/cuda/cuda_stream.h"
#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;

TEST_CASE("the current stream is the default stream until changed, per thread", "[cuda_stream][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  cuda::CUDAStream def = cuda::getDefaultCUDAStream(0);
  CHECK(def.is_default());
  CHECK(cuda::getCurrentCUDAStream(0) == def);
  cuda::CUDAStream side = cuda::getStreamFromPool(false, 0);
  CHECK_FALSE(side.is_default());
  CHECK(side.device() == Device(kCUDA, 0));
  {
    cuda::CUDAStreamGuard guard(side);
    CHECK(cuda::getCurrentCUDAStream(0) == side);
    bool other_thread_sees_default = false;
    std::thread t([&] { other_thread_sees_default = cuda::getCurrentCUDAStream(0).is_default(); });
    t.join();
    CHECK(other_thread_sees_default);
  }
  CHECK(cuda::getCurrentCUDAStream(0) == def);
}

TEST_CASE("pool streams are handed out round-robin and can be synchronized", "[cuda_stream][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  cuda::CUDAStream a = cuda::getStreamFromPool(false, 0);
  cuda::CUDAStream b = cuda::getStreamFromPool(false, 0);
  CHECK(a != b);
  cuda::CUDAStream hi = cuda::getStreamFromPool(true, 0);
  CHECK_FALSE(hi.is_default());
  {
    cuda::CUDAStreamGuard guard(a);
    Tensor x = ones({1 << 16}, TensorOptions().device(testing::cuda0()));
    Tensor y = mul(x, 3.0);  // runs on a
    a.synchronize();
    CHECK(a.query());
    CHECK(y.sum().item() == Approx(3.0 * (1 << 16)));
  }
}
