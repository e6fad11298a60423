// Tests of engine/cuda/emu/runtime.cpp and streams.cpp: the emulated CUDA runtime keeps CUDA's
// semantics and error codes (copy directions, asynchronous in-order streams, the legacy default
// stream, events, device limits, last-error state).
#include <catch2/catch.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cuda/emu/schedule.h"

namespace {

// A host function that holds its stream until released: what a slow kernel would do, but
// deterministic.
struct Gate {
  std::atomic<bool> open{false};
  static void wait(void* self) {
    auto* g = static_cast<Gate*>(self);
    while (!g->open.load()) {
    }
  }
};

}  // namespace

TEST_CASE("emulated runtime: an H200's properties", "[cuda_emu]") {
  int n = 0;
  REQUIRE(cudaGetDeviceCount(&n) == cudaSuccess);
  CHECK(n == 1);
  cudaDeviceProp p;
  REQUIRE(cudaGetDeviceProperties(&p, 0) == cudaSuccess);
  CHECK(std::string(p.name) == "NVIDIA H200 (emulated by remat)");
  CHECK(p.multiProcessorCount == 132);
  CHECK(p.warpSize == 32);
  CHECK(p.maxThreadsPerBlock == 1024);
  CHECK(p.sharedMemPerBlock == 48 * 1024);
  CHECK(p.major == 9);
  int v = 0;
  REQUIRE(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
  CHECK(v == 132);
  CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, 3) == cudaErrorInvalidDevice);
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
  CHECK(cudaGetLastError() == cudaSuccess);  // read and cleared
  CHECK(cudaSetDevice(1) == cudaErrorInvalidDevice);
  CHECK(cudaPeekAtLastError() == cudaErrorInvalidDevice);  // peeked, not cleared
  CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
  CHECK(std::string(cudaGetErrorName(cudaErrorInvalidDevice)) == "cudaErrorInvalidDevice");
  CHECK(std::string(cudaGetErrorString(cudaErrorInvalidDevice)) == "invalid device ordinal");
}

TEST_CASE("emulated runtime: copies check their direction against where each pointer lives", "[cuda_emu]") {
  void* d = nullptr;
  REQUIRE(cudaMalloc(&d, 64) == cudaSuccess);
  std::vector<char> h(64, 1);
  CHECK(cudaMemcpy(d, h.data(), 64, cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK(cudaMemcpy(h.data(), d, 64, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);  // reversed
  CHECK(cudaMemcpy(d, h.data(), 64, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(d, h.data(), 64, cudaMemcpyDeviceToDevice) == cudaErrorInvalidValue);
  CHECK(cudaMemcpy(d, h.data(), 65, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);  // past the allocation
  CHECK(cudaMemcpy(h.data(), d, 64, cudaMemcpyDefault) == cudaSuccess);
  CHECK(cudaMemset(static_cast<char*>(d) + 32, 0, 33) == cudaErrorInvalidValue);
  CHECK(cudaMemset(h.data(), 0, 8) == cudaErrorInvalidValue);  // host memory
  (void)cudaGetLastError();
  CHECK(cudaFree(h.data()) == cudaErrorInvalidValue);
  CHECK(cudaFree(static_cast<char*>(d) + 8) == cudaErrorInvalidValue);  // not an allocation's start
  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(cudaFree(d) == cudaErrorInvalidValue);  // twice
  (void)cudaGetLastError();
  void* z = reinterpret_cast<void*>(1);
  CHECK(cudaMalloc(&z, 0) == cudaSuccess);
  CHECK(z == nullptr);
}

TEST_CASE("emulated runtime: device memory is its own pool, with a capacity", "[cuda_emu]") {
  size_t free0 = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free0, &total) == cudaSuccess);
  CHECK(total == 141ull * 1000 * 1000 * 1000);
  void* d = nullptr;
  REQUIRE(cudaMalloc(&d, 1 << 20) == cudaSuccess);
  size_t free1 = 0;
  REQUIRE(cudaMemGetInfo(&free1, &total) == cudaSuccess);
  CHECK(free0 - free1 == (1u << 20));
  void* too_big = nullptr;
  CHECK(cudaMalloc(&too_big, total) == cudaErrorMemoryAllocation);
  CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
  CHECK(std::string(cudaGetErrorString(cudaErrorMemoryAllocation)) == "out of memory");
  cudaPointerAttributes a;
  REQUIRE(cudaPointerGetAttributes(&a, static_cast<char*>(d) + 100) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeDevice);
  CHECK(a.device == 0);
  int local = 0;
  REQUIRE(cudaPointerGetAttributes(&a, &local) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeUnregistered);
  void* pinned = nullptr;
  REQUIRE(cudaMallocHost(&pinned, 256) == cudaSuccess);
  REQUIRE(cudaPointerGetAttributes(&a, pinned) == cudaSuccess);
  CHECK(a.type == cudaMemoryTypeHost);
  CHECK(cudaFree(pinned) == cudaErrorInvalidValue);  // pinned memory goes back with cudaFreeHost
  (void)cudaGetLastError();
  CHECK(cudaFreeHost(pinned) == cudaSuccess);
  CHECK(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulated runtime: a stream runs its work later and in order: a missing synchronize shows", "[cuda_emu]") {
  cudaStream_t s;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  int* d = nullptr;
  int* pinned = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), sizeof(int)) == cudaSuccess);
  REQUIRE(cudaMallocHost(reinterpret_cast<void**>(&pinned), sizeof(int)) == cudaSuccess);
  *pinned = 7;
  REQUIRE(cudaMemcpy(d, pinned, sizeof(int), cudaMemcpyHostToDevice) == cudaSuccess);
  *pinned = 0;
  Gate gate;
  REQUIRE(cudaLaunchHostFunc(s, &Gate::wait, &gate) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(pinned, d, sizeof(int), cudaMemcpyDeviceToHost, s) == cudaSuccess);
  CHECK(cudaStreamQuery(s) == cudaErrorNotReady);
  CHECK(*pinned == 0);  // not copied yet: reading it here, without synchronising, is the bug
  gate.open = true;
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  CHECK(*pinned == 7);
  CHECK(cudaStreamQuery(s) == cudaSuccess);
  // A copy into pageable memory completes before the call returns, as cudart's.
  int pageable = 0;
  REQUIRE(cudaMemcpyAsync(&pageable, d, sizeof(int), cudaMemcpyDeviceToHost, s) == cudaSuccess);
  CHECK(pageable == 7);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
  CHECK(cudaStreamSynchronize(s) == cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  CHECK(cudaFreeHost(pinned) == cudaSuccess);
  CHECK(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulated runtime: the legacy default stream waits for blocking streams, not non-blocking ones",
          "[cuda_emu]") {
  cudaStream_t blocking, non_blocking;
  REQUIRE(cudaStreamCreate(&blocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&non_blocking, cudaStreamNonBlocking) == cudaSuccess);
  Gate gate;
  REQUIRE(cudaLaunchHostFunc(nullptr, &Gate::wait, &gate) == cudaSuccess);  // holds the legacy stream
  std::atomic<int> ran{0};
  auto mark = [](void* p) { static_cast<std::atomic<int>*>(p)->fetch_add(1); };
  REQUIRE(cudaLaunchHostFunc(non_blocking, mark, &ran) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(non_blocking) == cudaSuccess);
  CHECK(ran == 1);  // ran although the legacy stream is held
  REQUIRE(cudaLaunchHostFunc(blocking, mark, &ran) == cudaSuccess);
  CHECK(cudaStreamQuery(blocking) == cudaErrorNotReady);  // waits for the legacy stream's work
  CHECK(ran == 1);
  gate.open = true;
  REQUIRE(cudaStreamSynchronize(blocking) == cudaSuccess);
  CHECK(ran == 2);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(cudaStreamDestroy(blocking) == cudaSuccess);
  CHECK(cudaStreamDestroy(non_blocking) == cudaSuccess);
}

TEST_CASE("emulated runtime: events record, query, synchronise, wait and time", "[cuda_emu]") {
  cudaStream_t a, b;
  REQUIRE(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking) == cudaSuccess);
  cudaEvent_t start, stop, untimed;
  REQUIRE(cudaEventCreate(&start) == cudaSuccess);
  REQUIRE(cudaEventCreate(&stop) == cudaSuccess);
  REQUIRE(cudaEventCreateWithFlags(&untimed, cudaEventDisableTiming) == cudaSuccess);
  CHECK(cudaEventQuery(start) == cudaSuccess);  // never recorded: complete, as CUDA says
  Gate gate;
  REQUIRE(cudaEventRecord(start, a) == cudaSuccess);
  REQUIRE(cudaLaunchHostFunc(a, &Gate::wait, &gate) == cudaSuccess);
  REQUIRE(cudaEventRecord(stop, a) == cudaSuccess);
  CHECK(cudaEventQuery(stop) == cudaErrorNotReady);
  float ms = -1;
  CHECK(cudaEventElapsedTime(&ms, start, stop) == cudaErrorNotReady);
  std::atomic<int> ran{0};
  REQUIRE(cudaStreamWaitEvent(b, stop, 0) == cudaSuccess);
  REQUIRE(cudaLaunchHostFunc(b, [](void* p) { static_cast<std::atomic<int>*>(p)->store(1); }, &ran) == cudaSuccess);
  CHECK(cudaStreamQuery(b) == cudaErrorNotReady);  // b waits for a's event
  CHECK(ran == 0);
  gate.open = true;
  REQUIRE(cudaEventSynchronize(stop) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(b) == cudaSuccess);
  CHECK(ran == 1);
  REQUIRE(cudaEventElapsedTime(&ms, start, stop) == cudaSuccess);
  CHECK(ms >= 0);
  REQUIRE(cudaEventRecord(untimed, a) == cudaSuccess);
  REQUIRE(cudaEventSynchronize(untimed) == cudaSuccess);
  CHECK(cudaEventElapsedTime(&ms, start, untimed) == cudaErrorInvalidResourceHandle);
  CHECK(cudaStreamWaitEvent(b, stop, 1) == cudaErrorInvalidValue);
  (void)cudaGetLastError();
  for (cudaEvent_t e : {start, stop, untimed}) CHECK(cudaEventDestroy(e) == cudaSuccess);
  CHECK(cudaEventDestroy(start) == cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();
  CHECK(cudaStreamDestroy(a) == cudaSuccess);
  CHECK(cudaStreamDestroy(b) == cudaSuccess);
}

TEST_CASE("emulated runtime: REMAT_CUDA_EMU_SCHEDULE names forward, reverse or random:SEED", "[cuda_emu]") {
  using remat::cuda_emu::parse_schedules;
  const auto s = parse_schedules("forward,reverse,random:42");
  REQUIRE(s.size() == 3);
  CHECK(s[0].name() == "forward");
  CHECK(s[1].name() == "reverse");
  CHECK(s[2].name() == "random:42");
  CHECK_THROWS_WITH(parse_schedules("forwards"),
                    "REMAT_CUDA_EMU_SCHEDULE: unknown schedule 'forwards' in 'forwards' (expected forward, reverse or "
                    "random:SEED, comma-separated)");
  CHECK_THROWS_WITH(parse_schedules("random:x"), Catch::Contains("unknown schedule 'random:x'"));
  CHECK_THROWS_WITH(remat::cuda_emu::set_schedules({}), "remat::cuda_emu::set_schedules: no schedule given");
}
