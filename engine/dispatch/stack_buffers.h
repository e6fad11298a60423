// No PyTorch counterpart (PyTorch allocates a torch::jit::Stack vector per boxed call): buffers
// for the dispatcher's own short-lived stacks, kept per thread for reuse.
#pragma once

#include <cstddef>

#include "engine/core/ivalue.h"

namespace remat::detail {

// An empty stack with room for `capacity` values, on a reused buffer when there is one. For a
// typed call boxed for a dispatch mode and a pass-through's returns: without reuse every op under
// a mode would allocate and free two vectors.
Stack take_stack(size_t capacity);
// Releases the values on s now and keeps its buffer for a later take_stack.
void give_stack(Stack&& s);

}  // namespace remat::detail
