// Fibers for the emulated device: one per GPU thread of a block, switched cooperatively at
// barriers (no CUDA counterpart; what a GPU's warp scheduler does in hardware). A context switch
// saves the callee-saved registers and the stack pointer (x86-64 assembly; ucontext elsewhere),
// and tells ASan and TSan about the stack change.
#pragma once

#include <cstddef>

namespace remat::cuda_emu {

void fiber_trampoline(void* fiber);

// Stacks for a worker thread's fibers, reused from block to block.
class FiberStacks {
 public:
  explicit FiberStacks(size_t stack_bytes);
  ~FiberStacks();
  FiberStacks(const FiberStacks&) = delete;
  FiberStacks& operator=(const FiberStacks&) = delete;
  // Stack i (allocated, with a guard page below it, on first use).
  char* stack(size_t i, size_t* size);

 private:
  size_t stack_bytes_;
  struct Stack {
    char* mapping = nullptr;
    size_t mapping_bytes = 0;
  };
  Stack* stacks_ = nullptr;
  size_t count_ = 0;
};

// A fiber runs entry(arg) on its own stack; entry must end by calling fiber_exit.
class Fiber {
 public:
  using Entry = void (*)(void*);
  Fiber() = default;
  void start(char* stack, size_t size, Entry entry, void* arg);
  // From the scheduler (the worker thread's own stack): runs the fiber until it yields or exits.
  void resume();
  // From inside the fiber: back to the scheduler.
  void yield();
  // From inside the fiber, last: back to the scheduler for good.
  [[noreturn]] void exit();
  // From the scheduler, after the fiber exited: releases what start() took (TSan's fiber).
  void destroy();

 private:
  void* sp_ = nullptr;          // the fiber's saved stack pointer
  void* scheduler_sp_ = nullptr;
  char* stack_ = nullptr;
  size_t size_ = 0;
  void* fake_stack_ = nullptr;  // ASan's
  const void* scheduler_stack_bottom_ = nullptr;
  size_t scheduler_stack_size_ = 0;
  void* tsan_fiber_ = nullptr;
  void* tsan_scheduler_ = nullptr;
  void* ucontext_ = nullptr;    // non-x86-64 fallback
  void* scheduler_ucontext_ = nullptr;
  friend void fiber_trampoline(void*);
  Entry entry_ = nullptr;
  void* arg_ = nullptr;
};

}  // namespace remat::cuda_emu
