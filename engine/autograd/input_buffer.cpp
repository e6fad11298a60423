// Mirrors torch/csrc/autograd/input_buffer.cpp.
#include "engine/autograd/input_buffer.h"

#include "engine/autograd/ops_by_name.h"

namespace remat::autograd {

void InputBuffer::add(size_t pos, Tensor var) {
  if (!var.defined()) return;
  Tensor& slot = buffer_[pos];
  slot = slot.defined() ? ops_by_name::add(slot, var) : std::move(var);
}

}  // namespace remat::autograd
