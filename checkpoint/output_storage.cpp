// Which outputs of an op call are new memory (see output_storage.h; no PyTorch counterpart).
#include "checkpoint/output_storage.h"

namespace remat {

bool shares_storage_with(const Tensor& t, const std::vector<IValue>& args) {
  auto storage_of = [](const Tensor& x) { return x.defined() ? x.impl()->storage().get() : nullptr; };
  for (const IValue& a : args)
    if (a.isTensor() && storage_of(a.toTensor()) == storage_of(t)) return true;
  return false;
}

int64_t new_output_bytes(const std::vector<IValue>& args, const std::vector<IValue>& outputs) {
  int64_t n = 0;
  for (const IValue& v : outputs)
    if (v.isTensor() && v.toTensor().defined() && !shares_storage_with(v.toTensor(), args)) n += v.toTensor().nbytes();
  return n;
}

}  // namespace remat
