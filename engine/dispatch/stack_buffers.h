// No PyTorch counterpart (PyTorch allocates a torch::jit::Stack vector per boxed call): buffers
// for the dispatcher's own short-lived stacks, kept per thread for reuse.
#pragma once

#include <cstddef>

#include "engine/core/ivalue.h"

namespace remat::detail {

// This thread's spare buffers. Reached through a trivially constructed thread_local pointer (no
// TLS init guard or wrapper call per access), so take_stack and give_stack inline into the
// dispatcher's per-op paths.
struct StackBuffers {
  static constexpr int kMax = 4;  // a mode over a mode holds four at once
  Stack spare[kMax];
  int n = 0;
};
inline thread_local StackBuffers* tls_stack_buffers = nullptr;
// Creates this thread's buffers on first use (freed at thread exit).
StackBuffers* init_stack_buffers();

// An empty stack with room for `capacity` values, on a reused buffer when there is one. For a
// typed call boxed for a dispatch mode and a pass-through's returns: without reuse every op under
// a mode would allocate and free two vectors.
inline Stack take_stack(size_t capacity) {
  StackBuffers* b = tls_stack_buffers;
  if (__builtin_expect(b == nullptr, 0)) b = init_stack_buffers();
  Stack s;
  if (b->n > 0) s.swap(b->spare[--b->n]);  // the slot keeps s's empty state: nothing to free there
  if (__builtin_expect(s.capacity() < capacity, 0)) s.reserve(capacity);
  return s;
}
// Releases the values on s now and keeps its buffer for a later take_stack.
inline void give_stack(Stack&& s) {
  s.clear();
  StackBuffers* b = tls_stack_buffers;
  if (__builtin_expect(b == nullptr, 0)) b = init_stack_buffers();
  if (b->n < StackBuffers::kMax && s.capacity() != 0) b->spare[b->n++].swap(s);
}

}  // namespace remat::detail
