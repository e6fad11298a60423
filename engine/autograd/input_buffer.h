// Mirrors torch/csrc/autograd/input_buffer.h: sums the gradients flowing into one node input.
#pragma once

#include <vector>

#include "engine/core/tensor.h"

namespace remat::autograd {

class InputBuffer {
 public:
  explicit InputBuffer(size_t size) : buffer_(size) {}
  // Adds var to slot pos (out of place, through the dispatcher's aten::add).
  void add(size_t pos, Tensor var);
  std::vector<Tensor> take() { return std::move(buffer_); }
  size_t size() const { return buffer_.size(); }

 private:
  std::vector<Tensor> buffer_;
};

}  // namespace remat::autograd
