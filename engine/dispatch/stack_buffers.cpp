// No PyTorch counterpart: see stack_buffers.h.
#include "engine/dispatch/stack_buffers.h"

namespace remat::detail {

namespace {
struct StackBuffers {
  static constexpr int kMax = 4;  // a mode over a mode holds four at once
  Stack spare[kMax];
  int n = 0;
};
// Local to this file, so its initialisation check is inlined into the two functions below (an
// inline thread_local in a header is reached through a call per access).
thread_local StackBuffers tls_stack_buffers;
}  // namespace

Stack take_stack(size_t capacity) {
  StackBuffers& b = tls_stack_buffers;
  Stack s;
  if (b.n > 0) s.swap(b.spare[--b.n]);  // the slot keeps s's empty state: nothing to free there
  if (s.capacity() < capacity) s.reserve(capacity);
  return s;
}

void give_stack(Stack&& s) {
  s.clear();
  StackBuffers& b = tls_stack_buffers;
  if (b.n < StackBuffers::kMax && s.capacity() != 0) b.spare[b.n++].swap(s);
}

}  // namespace remat::detail
