// Tests engine/cuda/caching_allocator.{h,cpp}: the kCUDA allocator through tensors (the block
// logic itself, over a fake device, is tested in tests/engine/core/device_caching_allocator_test.cpp),
// and that a Meta dry run imitating CUDA predicts its reserved bytes and segments exactly.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <map>
#include <set>

#include "engine/cuda/caching_allocator.h"
#include "engine/cuda/cuda_functions.h"
#include "engine/cuda/cuda_guard.h"
#include "engine/cuda/cuda_stream.h"
#include "remat.h"
#include "tests/testing/cuda.h"

using namespace remat;
namespace cca = remat::cuda::CUDACachingAllocator;

namespace {
constexpr size_t kMiB = 1024 * 1024;
}  // namespace

// ---- the real kCUDA allocator ----

TEST_CASE("kCUDA allocator: memory_allocated counts the live tensors' rounded blocks exactly", "[allocator][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device d = testing::cuda0();
  cuda::device_synchronize();
  const int64_t base = memory_allocated(d);
  {
    Tensor a = empty({1000}, TensorOptions().device(d));           // 4000 bytes: a 4096-byte block
    Tensor b = empty({3, 7}, TensorOptions().dtype(kHalf).device(d));  // 42 bytes: a 512-byte block
    CHECK(memory_allocated(d) == base + 4096 + 512);
    CHECK(max_memory_allocated(d) >= base + 4096 + 512);
    CHECK(memory_reserved(d) >= memory_allocated(d));
  }
  CHECK(memory_allocated(d) == base);
  reset_peak_memory_stats(d);
  CHECK(max_memory_allocated(d) == base);
}

TEST_CASE("kCUDA allocator: a freed block is handed out again without cudaMalloc", "[allocator][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device d = testing::cuda0();
  void* first = nullptr;
  {
    Tensor a = empty({256, 256}, TensorOptions().device(d));
    first = a.data_ptr();
  }
  const int64_t allocs = cca::get_device_stats(0).device_allocs;
  Tensor b = empty({256, 256}, TensorOptions().device(d));
  CHECK(b.data_ptr() == first);
  CHECK(cca::get_device_stats(0).device_allocs == allocs);
}

TEST_CASE("kCUDA allocator: empty_cache gives unused segments back", "[allocator][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device d = testing::cuda0();
  { Tensor a = empty({64, 1024, 1024}, TensorOptions().device(d)); }  // 256 MiB, now cached
  CHECK(memory_reserved(d) >= static_cast<int64_t>(256 * kMiB));
  const int64_t live = memory_allocated(d);
  cuda::empty_cache();
  // Only segments that still hold live tensors remain.
  CHECK(memory_reserved(d) < static_cast<int64_t>(256 * kMiB) + live + static_cast<int64_t>(64 * kMiB));
}

TEST_CASE("kCUDA allocator: record_stream keeps memory from reuse until the other stream is done",
          "[allocator][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const Device d = testing::cuda0();
  cuda::CUDAStream side = cuda::getStreamFromPool();
  void* p = nullptr;
  {
    Tensor a = full({1 << 20}, 1.0, TensorOptions().device(d));
    p = a.data_ptr();
    cuda::device_synchronize();  // a is written before the side stream reads it
    {
      cuda::CUDAStreamGuard guard(side);
      Tensor b = mul(a, 2.0);  // a is used on the side stream
      (void)b;
    }
    cca::record_stream(a, side);
  }
  side.synchronize();
  // After the side stream finished, the block is reusable on the default stream.
  Tensor c = empty({1 << 20}, TensorOptions().device(d));
  Tensor e = empty({1 << 20}, TensorOptions().device(d));
  CHECK((c.data_ptr() == p || e.data_ptr() == p));
}

TEST_CASE("kCUDA allocator: copies between host and device round-trip", "[allocator][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor host = arange(1000, TensorOptions().dtype(kFloat));
  Tensor dev = host.to(testing::cuda0());
  CHECK(dev.is_cuda());
  CHECK(equal(dev.to(Device{kCPU}), host));
}
