// Tests of kernels/cuda/emu with engine/cuda/emu's device memory under ASan: a kernel that
// stores one element past its cudaMalloc'd buffer gets an ASan report naming the kernel's source
// line (run in a child process, since ASan stops the process that overflows).
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

#include "kernels/cuda/launch.h"

namespace {

__global__ void planted_oob_store(float* out, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i <= n) out[i] = 1.0f;  // the planted bug: <= writes out[n]
}
constexpr int kPlantedLine = __LINE__ - 2;

#if defined(__SANITIZE_ADDRESS__)
std::string run_child() {
  // This binary's own path (inside popen's shell, /proc/self/exe would be the shell).
  std::array<char, 4096> self{};
  REQUIRE(readlink("/proc/self/exe", self.data(), self.size() - 1) > 0);
  std::string out;
  FILE* p = popen(("REMAT_OOB_CHILD=1 '" + std::string(self.data()) + "' '[.oob_child]' 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf;
  size_t got;
  while ((got = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), got);
  const int status = pclose(p);
  CHECK(status != 0);  // ASan ends the child
  return out;
}
#endif

}  // namespace

TEST_CASE("planted out-of-bounds store: the child that runs it", "[.oob_child]") {
  if (std::getenv("REMAT_OOB_CHILD") == nullptr) return;
  float* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 100 * sizeof(float)) == cudaSuccess);
  REMAT_CUDA_LAUNCH(1, 128, 0, nullptr, planted_oob_store)(d, 100);
  (void)cudaDeviceSynchronize();
}

#if defined(__SANITIZE_ADDRESS__)
TEST_CASE("emulated kernels under ASan: an out-of-bounds store is reported with the kernel's line", "[cuda_emu]") {
  const std::string report = run_child();
  INFO(report);
  CHECK_THAT(report, Catch::Contains("ERROR: AddressSanitizer: heap-buffer-overflow"));
  CHECK_THAT(report, Catch::Contains("planted_oob_store"));
  CHECK_THAT(report, Catch::Contains("oob_store_test.cpp:" + std::to_string(kPlantedLine)));
  CHECK_THAT(report, Catch::Contains("0 bytes to the right of 400-byte region"));
}
#else
TEST_CASE("emulated kernels without ASan: each device allocation is a separate, aligned block", "[cuda_emu]") {
  // What makes the ASan report above possible: no two allocations share a heap block.
  float* a = nullptr;
  float* b = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&a), 400) == cudaSuccess);
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&b), 400) == cudaSuccess);
  CHECK(reinterpret_cast<uintptr_t>(a) % 256 == 0);
  CHECK(reinterpret_cast<uintptr_t>(b) % 256 == 0);
  cudaPointerAttributes attr;
  REQUIRE(cudaPointerGetAttributes(&attr, a + 100) == cudaSuccess);
  CHECK((attr.type != cudaMemoryTypeDevice || b == a + 100));  // one past a is not a's (unless b starts there)
  REQUIRE(cudaFree(a) == cudaSuccess);
  REQUIRE(cudaFree(b) == cudaSuccess);
}
#endif
