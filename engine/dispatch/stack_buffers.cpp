// No PyTorch counterpart: see stack_buffers.h.
#include "engine/dispatch/stack_buffers.h"

#include <memory>

namespace remat::detail {

namespace {
// Owns the thread's buffers; at thread exit frees them and clears the pointer, so a later use
// (from another thread_local's destructor) makes a fresh set instead of reading freed memory.
struct StackBuffersOwner {
  std::unique_ptr<StackBuffers> buffers;
  ~StackBuffersOwner() {
    buffers.reset();
    tls_stack_buffers = nullptr;
  }
};
}  // namespace

StackBuffers* init_stack_buffers() {
  thread_local StackBuffersOwner owner;
  if (owner.buffers == nullptr) owner.buffers = std::make_unique<StackBuffers>();
  tls_stack_buffers = owner.buffers.get();
  return tls_stack_buffers;
}

}  // namespace remat::detail
