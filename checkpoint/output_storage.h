// Which outputs of an op call are new memory (no PyTorch counterpart; torch/distributed/_tools/
// sac_estimator.py tells a view from a new output by its untyped storage the same way): what the
// runtime estimator's roofline reads and the planner's profile counts. Internal: remat.h does not
// reach it.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/ivalue.h"
#include "engine/core/tensor.h"

namespace remat {

// A call's output `t` shares the storage of one of its tensor arguments (a view, or an in-place
// op's return): it allocates nothing.
bool shares_storage_with(const Tensor& t, const std::vector<IValue>& args);
// Bytes of the outputs a call newly allocates (those that share no argument's storage).
int64_t new_output_bytes(const std::vector<IValue>& args, const std::vector<IValue>& outputs);

}  // namespace remat
