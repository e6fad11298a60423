// Fibers for the emulated device: see fiber.h.
#include "kernels/cuda/emu/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define REMAT_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REMAT_EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define REMAT_EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define REMAT_EMU_TSAN 1
#endif
#endif

#ifdef REMAT_EMU_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef REMAT_EMU_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace remat::cuda_emu {

#if defined(__x86_64__)
// remat_emu_switch(save, next): pushes the callee-saved registers and the SSE/x87 control words
// on the current stack, stores the stack pointer in *save, and pops the same from `next`.
// remat_emu_fiber_start: where a new fiber's first switch "returns" to; calls r13(r12).
extern "C" void remat_emu_switch(void** save, void* next);
extern "C" void remat_emu_fiber_start();
asm(R"(
  .text
  .p2align 4
  .hidden remat_emu_switch
  .globl remat_emu_switch
  .type remat_emu_switch, @function
remat_emu_switch:
  .cfi_startproc
  endbr64
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size remat_emu_switch, .-remat_emu_switch

  .p2align 4
  .hidden remat_emu_fiber_start
  .globl remat_emu_fiber_start
  .type remat_emu_fiber_start, @function
remat_emu_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  endbr64
  movq %r12, %rdi
  callq *%r13
  ud2
  .cfi_endproc
  .size remat_emu_fiber_start, .-remat_emu_fiber_start
)");
#endif

FiberStacks::FiberStacks(size_t stack_bytes) : stack_bytes_(stack_bytes) {}

FiberStacks::~FiberStacks() {
  for (size_t i = 0; i < count_; ++i)
    if (stacks_[i].mapping != nullptr) munmap(stacks_[i].mapping, stacks_[i].mapping_bytes);
  std::free(stacks_);
}

char* FiberStacks::stack(size_t i, size_t* size) {
  if (i >= count_) {
    size_t n = count_ == 0 ? 64 : count_;
    while (n <= i) n *= 2;
    auto* grown = static_cast<Stack*>(std::realloc(stacks_, n * sizeof(Stack)));
    if (grown == nullptr) throw std::bad_alloc();
    for (size_t k = count_; k < n; ++k) new (&grown[k]) Stack();
    stacks_ = grown;
    count_ = n;
  }
  Stack& s = stacks_[i];
  if (s.mapping == nullptr) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    s.mapping_bytes = stack_bytes_ + page;
    void* m = mmap(nullptr, s.mapping_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    mprotect(m, page, PROT_NONE);  // a GPU thread that overflows its stack faults here
    s.mapping = static_cast<char*>(m);
  }
  *size = stack_bytes_;
  return s.mapping + (s.mapping_bytes - stack_bytes_);
}

void fiber_trampoline(void* arg) {
  auto* f = static_cast<Fiber*>(arg);
#ifdef REMAT_EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &f->scheduler_stack_bottom_, &f->scheduler_stack_size_);
#endif
  f->entry_(f->arg_);
  f->exit();
}

#if !defined(__x86_64__)
namespace {
void ucontext_entry(unsigned hi, unsigned lo) {
  fiber_trampoline(reinterpret_cast<void*>((static_cast<uintptr_t>(hi) << 32) | lo));
}
}  // namespace
#endif

void Fiber::start(char* stack, size_t size, Entry entry, void* arg) {
  stack_ = stack;
  size_ = size;
  entry_ = entry;
  arg_ = arg;
  fake_stack_ = nullptr;
#ifdef REMAT_EMU_ASAN
  // A fiber that ended left its frames' redzones poisoned on this stack.
  __asan_unpoison_memory_region(stack, size);
#endif
#ifdef REMAT_EMU_TSAN
  tsan_fiber_ = __tsan_create_fiber(0);
#endif
#if defined(__x86_64__)
  auto top = reinterpret_cast<uintptr_t>(stack + size) & ~static_cast<uintptr_t>(15);
  auto* slot = reinterpret_cast<uint64_t*>(top);
  // From the top: the start routine as the return address (so that it runs with rsp 16-byte
  // aligned, as after a call), rbp, rbx, r12 = this, r13 = trampoline, r14, r15, control words.
  slot[-3] = reinterpret_cast<uint64_t>(&remat_emu_fiber_start);
  slot[-4] = 0;                                             // rbp
  slot[-5] = 0;                                             // rbx
  slot[-6] = reinterpret_cast<uint64_t>(this);              // r12
  slot[-7] = reinterpret_cast<uint64_t>(&fiber_trampoline);  // r13
  slot[-8] = 0;                                             // r14
  slot[-9] = 0;                                             // r15
  uint32_t mxcsr;
  uint16_t fpucw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpucw));
  auto* words = reinterpret_cast<uint32_t*>(&slot[-10]);
  words[0] = mxcsr;
  words[1] = fpucw;
  sp_ = &slot[-10];
#else
  if (ucontext_ == nullptr) {
    ucontext_ = new ucontext_t();
    scheduler_ucontext_ = new ucontext_t();
  }
  auto* uc = static_cast<ucontext_t*>(ucontext_);
  getcontext(uc);
  uc->uc_stack.ss_sp = stack;
  uc->uc_stack.ss_size = size;
  uc->uc_link = nullptr;
  const auto p = reinterpret_cast<uintptr_t>(this);
  makecontext(uc, reinterpret_cast<void (*)()>(&ucontext_entry), 2, static_cast<unsigned>(p >> 32),
              static_cast<unsigned>(p & 0xffffffffu));
#endif
}

void Fiber::resume() {
#ifdef REMAT_EMU_ASAN
  void* scheduler_fake = nullptr;
  __sanitizer_start_switch_fiber(&scheduler_fake, stack_, size_);
#endif
#ifdef REMAT_EMU_TSAN
  tsan_scheduler_ = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(tsan_fiber_, 0);
#endif
#if defined(__x86_64__)
  remat_emu_switch(&scheduler_sp_, sp_);
#else
  swapcontext(static_cast<ucontext_t*>(scheduler_ucontext_), static_cast<ucontext_t*>(ucontext_));
#endif
#ifdef REMAT_EMU_ASAN
  __sanitizer_finish_switch_fiber(scheduler_fake, nullptr, nullptr);
#endif
}

void Fiber::yield() {
#ifdef REMAT_EMU_ASAN
  __sanitizer_start_switch_fiber(&fake_stack_, scheduler_stack_bottom_, scheduler_stack_size_);
#endif
#ifdef REMAT_EMU_TSAN
  __tsan_switch_to_fiber(tsan_scheduler_, 0);
#endif
#if defined(__x86_64__)
  remat_emu_switch(&sp_, scheduler_sp_);
#else
  swapcontext(static_cast<ucontext_t*>(ucontext_), static_cast<ucontext_t*>(scheduler_ucontext_));
#endif
#ifdef REMAT_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake_stack_, &scheduler_stack_bottom_, &scheduler_stack_size_);
#endif
}

void Fiber::destroy() {
#ifdef REMAT_EMU_TSAN
  if (tsan_fiber_ != nullptr) __tsan_destroy_fiber(tsan_fiber_);
  tsan_fiber_ = nullptr;
#endif
}

void Fiber::exit() {
#ifdef REMAT_EMU_ASAN
  __sanitizer_start_switch_fiber(nullptr, scheduler_stack_bottom_, scheduler_stack_size_);
#endif
#ifdef REMAT_EMU_TSAN
  __tsan_switch_to_fiber(tsan_scheduler_, 0);  // the scheduler destroys this fiber (destroy())
#endif
#if defined(__x86_64__)
  remat_emu_switch(&sp_, scheduler_sp_);
#else
  setcontext(static_cast<ucontext_t*>(scheduler_ucontext_));
#endif
  std::abort();  // never resumed
}

}  // namespace remat::cuda_emu
