// One block of a kernel on the emulated device: its threads as fibers on one worker thread,
// run in the schedule's order until each reaches a barrier (__syncthreads, a warp collective),
// then released together. Mirrors what an SM does for a resident block, minus the parallelism:
// the order between two barriers is the schedule's, so a race shows as a schedule-dependent
// result; a barrier some threads never reach shows as a deadlock naming the kernel.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/cuda/emu/schedule.h"
#include "kernels/cuda/emu/fiber.h"

namespace remat::cuda_emu {

// What every thread of a launch runs: invoke(closure) calls the kernel with its arguments.
struct KernelCall {
  const char* name = "";
  dim3 grid, block;
  size_t dynamic_shared_bytes = 0;
  void (*invoke)(const void* closure) = nullptr;
  const void* closure = nullptr;
  const void* argument_bytes = nullptr;  // the copied arguments (where run_grid looks for pointers)
  size_t argument_size = 0;
};

enum class Wait : uint8_t { Running, Block, Warp, Done };

struct ThreadState {
  Fiber fiber;
  uint3 index{0, 0, 0};
  int linear = 0;
  Wait wait = Wait::Running;
  unsigned warp_mask = 0;  // lanes a warp collective waits for
  unsigned parity = 0;     // which half of the warp's exchange buffer the next collective uses
};

struct BlockState {
  const KernelCall* call = nullptr;
  uint3 index{0, 0, 0};
  int threads = 0;
  ThreadState* thread_states = nullptr;
  uint64_t* exchange = nullptr;  // [warps][2][32] values of warp collectives
  char* dynamic_shared = nullptr;
};

// Runs one block; returns "" or what went wrong (a deadlock, an exception thrown by a thread).
std::string run_block(const KernelCall& call, uint3 block_index, const Schedule& schedule, uint64_t launch_id);

// The block and thread the calling fiber is (valid only inside a kernel).
BlockState& current_block();
ThreadState& current_thread();

// Barriers, from inside a kernel.
void block_barrier();                 // __syncthreads
void warp_barrier(unsigned mask);     // __syncwarp and every warp collective
// The exchange slot of lane `lane` of the calling thread's warp for the collective now under
// way (write yours, warp_barrier, read another's).
uint64_t* warp_slot(int lane);

}  // namespace remat::cuda_emu
