// Mirrors torch.utils._pytree's tree_map_only(torch.Tensor, fn, out) as SAC applies it to an op's
// returns (checkpoint/selective.cpp, checkpoint/selective_offload.cpp): each tensor among them, a
// Tensor[] return's elements in order. Internal: remat.h does not reach it.
#pragma once

#include <vector>

#include "engine/core/ivalue.h"
#include "engine/core/tensor.h"

namespace remat::sac_detail {

// Calls fn on each tensor among an op's returns (a Tensor[] return's elements in order); fn may
// replace the tensor it is given.
template <class Fn>
void for_each_tensor(std::vector<IValue>& values, Fn fn) {
  for (IValue& v : values) {
    if (v.isTensor()) {
      fn(v.toTensor());
    } else if (v.isTensorList()) {
      std::vector<Tensor> list = v.toTensorVector();
      for (Tensor& t : list) fn(t);
      v = IValue(std::move(list));
    }
  }
}

}  // namespace remat::sac_detail
