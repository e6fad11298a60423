// Tests of kernels/cuda/emu (block.cpp, grid.cpp, device.h): CUDA's execution model on the
// emulated device. Kernels written here as in a .cu file; launched through REMAT_CUDA_LAUNCH.
// The planted races prove the schedule comparison finds what it is for.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/cuda/emu/schedule.h"
#include "kernels/cuda/launch.h"

namespace {

using remat::cuda_emu::Schedule;

__global__ void write_indices(unsigned* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned per_block = blockDim.x * blockDim.y * blockDim.z;
  out[(block * per_block + thread) * 2] = block;
  out[(block * per_block + thread) * 2 + 1] = thread;
}

// A block sum through shared memory (the tree of kernels/cuda/common.cuh's block_allreduce).
template <bool kSyncBeforeRead>
__global__ void block_sum(const float* in, float* out) {
  __shared__ float partial[32];
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  if (kSyncBeforeRead) __syncthreads();  // the planted race: without it warp 0 reads early
  if (warp == 0) {
    v = lane < static_cast<int>(blockDim.x >> 5) ? partial[lane] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) out[blockIdx.x] = v;
  }
  __syncthreads();  // partial is reused by the worker's next block
}

// Each lane reads what its neighbour wrote to shared memory.
template <bool kSyncWarp>
__global__ void neighbour_read(float* out) {
  __shared__ float slot[32];
  const int lane = threadIdx.x & 31;
  slot[lane] = static_cast<float>(lane + 1);
  if (kSyncWarp) __syncwarp();  // the planted race: without it a lane may read before its neighbour writes
  out[lane] = slot[(lane + 1) & 31];
  __syncwarp();
  slot[lane] = -1.0f;  // leaves the buffer as a later block would find it
}

__global__ void divergent_barrier(int* out) {
  if (threadIdx.x != 0) __syncthreads();  // thread 0 never arrives... and exits: allowed
  out[threadIdx.x] = 1;
}

__global__ void split_barrier(int* out) {
  if (threadIdx.x < 48) {
    __syncthreads();
  } else {
    out[0] = __shfl_xor_sync(0xffffffffu, 1, 1);  // waits for lanes 32..47 of its warp, which wait at __syncthreads
    __syncthreads();
  }
}

__global__ void count_atomically(int* counter, unsigned long long* smallest) {
  atomicAdd(counter, 1);
  atomicMin(smallest, static_cast<unsigned long long>(blockIdx.x * blockDim.x + threadIdx.x + 5));
}

__global__ void dynamic_shared_reverse(const int* in, int* out) {
  REMAT_CUDA_DYNAMIC_SHARED(int, buf);
  buf[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}

__global__ void votes(unsigned* out) {
  const int lane = threadIdx.x & 31;
  const unsigned b = __ballot_sync(0xffffffffu, lane % 3 == 0);
  const int any = __any_sync(0xffffffffu, lane == 31);
  const int all = __all_sync(0xffffffffu, lane < 31);
  const int down = __shfl_down_sync(0xffffffffu, lane, 1);
  const int bcast = __shfl_sync(0xffffffffu, lane * 10, 5);
  if (lane == 0) {
    out[0] = b;
    out[1] = static_cast<unsigned>(any);
    out[2] = static_cast<unsigned>(all);
  }
  out[3 + lane] = static_cast<unsigned>(down);
  out[35 + lane] = static_cast<unsigned>(bcast);
}

template <class T>
T* device_array(const std::vector<T>& host) {
  T* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), host.size() * sizeof(T)) == cudaSuccess);
  REQUIRE(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  return d;
}

template <class T>
std::vector<T> host_array(const T* d, size_t n) {
  std::vector<T> h(n);
  REQUIRE(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
  return h;
}

// Runs `body` with the given schedules, then puts back what the environment said.
template <class F>
void with_schedules(const std::string& spec, F body) {
  const auto saved = remat::cuda_emu::schedules();
  remat::cuda_emu::set_schedules(remat::cuda_emu::parse_schedules(spec));
  body();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  remat::cuda_emu::set_schedules(saved);
}

}  // namespace

TEST_CASE("emulated kernels: threadIdx, blockIdx, blockDim and gridDim in three dimensions", "[cuda_emu]") {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  const size_t n = 12 * 24;
  unsigned* d = device_array(std::vector<unsigned>(2 * n, 0));
  REMAT_CUDA_LAUNCH(grid, block, 0, nullptr, write_indices)(d);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const auto h = host_array(d, 2 * n);
  for (size_t i = 0; i < n; ++i) {
    CHECK(h[2 * i] == i / 24);
    CHECK(h[2 * i + 1] == i % 24);
  }
  REQUIRE(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulated kernels: a correct block reduction gives the same bits under every schedule", "[cuda_emu]") {
  std::vector<float> in(4 * 256);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 1.0f / static_cast<float>(i + 1);
  float* d_in = device_array(in);
  float* d_out = device_array(std::vector<float>(4, 0.0f));
  with_schedules("forward,reverse,random:1,random:2", [&] {
    REMAT_CUDA_LAUNCH(4, 256, 0, nullptr, block_sum<true>)(d_in, d_out);
  });
  const auto out = host_array(d_out, 4);
  for (int b = 0; b < 4; ++b) {
    double expected = 0;
    for (int i = 0; i < 256; ++i) expected += in[b * 256 + i];
    CHECK(out[b] == Approx(expected).epsilon(1e-5));
  }
  REQUIRE(cudaFree(d_in) == cudaSuccess);
  REQUIRE(cudaFree(d_out) == cudaSuccess);
}

TEST_CASE("emulated kernels: a block reduction missing __syncthreads is caught, naming the kernel", "[cuda_emu]") {
  std::vector<float> in(4 * 256);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i / 256 + 1);  // partials differ by block
  float* d_in = device_array(in);
  float* d_out = device_array(std::vector<float>(4, 0.0f));
  const auto saved = remat::cuda_emu::schedules();
  remat::cuda_emu::set_schedules(remat::cuda_emu::parse_schedules("forward,reverse"));
  REMAT_CUDA_LAUNCH(4, 256, 0, nullptr, block_sum<false>)(d_in, d_out);
  // The launch itself is fine. Peek, not Get: the kernel runs asynchronously, and its own failure may
  // already reach cudaGetLastError before the synchronize, as with cudart.
  REQUIRE(cudaPeekAtLastError() == cudaSuccess);
  const cudaError_t err = cudaDeviceSynchronize();
  remat::cuda_emu::set_schedules(saved);
  REQUIRE(err == cudaErrorLaunchFailure);
  CHECK(cudaGetLastError() == cudaErrorLaunchFailure);  // as cudart: the failing call set the last error
  CHECK(cudaGetLastError() == cudaSuccess);
  const std::string message = cudaGetErrorString(err);
  INFO(message);
  CHECK_THAT(message, Catch::StartsWith("unspecified launch failure: kernel {anonymous}::block_sum<false>: its result "
                                        "depends on the order its threads run in (a race): schedules forward and "
                                        "reverse leave different bytes, first at byte "));
  REQUIRE(cudaFree(d_in) == cudaSuccess);
  REQUIRE(cudaFree(d_out) == cudaSuccess);
}

TEST_CASE("emulated kernels: a warp reading a lane's write without __syncwarp is caught, naming the kernel",
          "[cuda_emu]") {
  float* d_out = device_array(std::vector<float>(32, 0.0f));
  with_schedules("forward,reverse", [&] { REMAT_CUDA_LAUNCH(1, 32, 0, nullptr, neighbour_read<true>)(d_out); });
  const auto good = host_array(d_out, 32);
  for (int lane = 0; lane < 32; ++lane) CHECK(good[lane] == static_cast<float>((lane + 1) % 32 + 1));

  const auto saved = remat::cuda_emu::schedules();
  remat::cuda_emu::set_schedules(remat::cuda_emu::parse_schedules("forward,reverse"));
  REMAT_CUDA_LAUNCH(1, 32, 0, nullptr, neighbour_read<false>)(d_out);
  const cudaError_t err = cudaDeviceSynchronize();
  remat::cuda_emu::set_schedules(saved);
  REQUIRE(err == cudaErrorLaunchFailure);
  (void)cudaGetLastError();
  CHECK_THAT(std::string(cudaGetErrorString(err)),
             Catch::Contains("kernel {anonymous}::neighbour_read<false>: its result depends on the order its threads "
                             "run in (a race)"));
  REQUIRE(cudaFree(d_out) == cudaSuccess);
}

TEST_CASE("emulated kernels: exited threads count as arrived at __syncthreads; a split barrier deadlocks",
          "[cuda_emu]") {
  int* d = device_array(std::vector<int>(64, 0));
  REMAT_CUDA_LAUNCH(1, 64, 0, nullptr, divergent_barrier)(d);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  for (int v : host_array(d, 64)) CHECK(v == 1);
  REMAT_CUDA_LAUNCH(1, 64, 0, nullptr, split_barrier)(d);
  const cudaError_t err = cudaDeviceSynchronize();
  REQUIRE(err == cudaErrorLaunchFailure);
  (void)cudaGetLastError();
  CHECK_THAT(std::string(cudaGetErrorString(err)),
             Catch::Contains("kernel {anonymous}::split_barrier: deadlock in block (0, 0, 0): threads wait at "
                             "barriers that the others never reach: thread 0 at __syncthreads;"));
  REQUIRE(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulated kernels: atomics across blocks running on several host threads", "[cuda_emu]") {
  int* counter = device_array(std::vector<int>{0});
  unsigned long long* smallest = device_array(std::vector<unsigned long long>{~0ull});
  REMAT_CUDA_LAUNCH(64, 128, 0, nullptr, count_atomically)(counter, smallest);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  CHECK(host_array(counter, 1)[0] == 64 * 128);
  CHECK(host_array(smallest, 1)[0] == 5);
  REQUIRE(cudaFree(counter) == cudaSuccess);
  REQUIRE(cudaFree(smallest) == cudaSuccess);
}

TEST_CASE("emulated kernels: dynamic shared memory, and its limit", "[cuda_emu]") {
  std::vector<int> in(128);
  for (int i = 0; i < 128; ++i) in[i] = i * 3;
  int* d_in = device_array(in);
  int* d_out = device_array(std::vector<int>(128, 0));
  REMAT_CUDA_LAUNCH(1, 128, 128 * sizeof(int), nullptr, dynamic_shared_reverse)(d_in, d_out);
  REQUIRE(cudaGetLastError() == cudaSuccess);
  const auto out = host_array(d_out, 128);
  for (int i = 0; i < 128; ++i) CHECK(out[i] == (127 - i) * 3);
  // Over 48 KiB needs the opt-in, as on an H200.
  REMAT_CUDA_LAUNCH(1, 128, 64 * 1024, nullptr, dynamic_shared_reverse)(d_in, d_out);
  CHECK(cudaGetLastError() == cudaErrorInvalidValue);
  REQUIRE(cudaFuncSetAttribute(dynamic_shared_reverse, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024) ==
          cudaSuccess);
  REMAT_CUDA_LAUNCH(1, 128, 64 * 1024, nullptr, dynamic_shared_reverse)(d_in, d_out);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(cudaFuncSetAttribute(dynamic_shared_reverse, cudaFuncAttributeMaxDynamicSharedMemorySize, 228 * 1024) ==
        cudaErrorInvalidValue);
  (void)cudaGetLastError();
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  REQUIRE(cudaFree(d_in) == cudaSuccess);
  REQUIRE(cudaFree(d_out) == cudaSuccess);
}

TEST_CASE("emulated kernels: a launch over a limit fails with CUDA's error", "[cuda_emu]") {
  unsigned* d = device_array(std::vector<unsigned>(2, 0));
  REMAT_CUDA_LAUNCH(1, 1025, 0, nullptr, write_indices)(d);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  REMAT_CUDA_LAUNCH(dim3(1, 1, 1), dim3(1, 1, 65), 0, nullptr, write_indices)(d);
  CHECK(cudaPeekAtLastError() == cudaErrorInvalidConfiguration);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  REMAT_CUDA_LAUNCH(0, 32, 0, nullptr, write_indices)(d);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  REMAT_CUDA_LAUNCH(1, 32, 0, reinterpret_cast<cudaStream_t>(0x1234), write_indices)(d);
  CHECK(cudaGetLastError() == cudaErrorInvalidResourceHandle);
  CHECK(std::string(cudaGetErrorString(cudaErrorInvalidConfiguration)) == "invalid configuration argument");
  REQUIRE(cudaFree(d) == cudaSuccess);
}

TEST_CASE("emulated kernels: warp votes and shuffles", "[cuda_emu]") {
  unsigned* d = device_array(std::vector<unsigned>(67, 0));
  with_schedules("forward,reverse", [&] { REMAT_CUDA_LAUNCH(1, 32, 0, nullptr, votes)(d); });
  const auto h = host_array(d, 67);
  unsigned expected_ballot = 0;
  for (int l = 0; l < 32; l += 3) expected_ballot |= 1u << l;
  CHECK(h[0] == expected_ballot);
  CHECK(h[1] == 1);
  CHECK(h[2] == 0);
  for (int l = 0; l < 32; ++l) {
    CHECK(h[3 + l] == static_cast<unsigned>(l == 31 ? 31 : l + 1));
    CHECK(h[35 + l] == 50);
  }
  REQUIRE(cudaFree(d) == cudaSuccess);
}
