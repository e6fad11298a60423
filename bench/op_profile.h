// Mirrors torch.profiler's key_averages() table (self CPU time per aten op), for the ops a
// training step runs: a dispatch mode that times every op call it sees.
//
//   auto profile = std::make_shared<OpProfile>();
//   { DispatchModeGuard g(profile); step(); }
//   std::printf("%s", profile->table(/*steps=*/1).c_str());
//
// A mode sees the calls below autograd, as PyTorch's mode does: the leaf ops of a composite (linear
// as t, view, addmm), the backward formulas' ops and the recomputations. Leaves do not nest, so an
// op's time is its own. Boxing each call costs a microsecond or so, not counted in any op's time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "remat.h"

namespace remat::bench {

class OpProfile : public DispatchMode {
 public:
  struct Row {
    std::string op;     // "aten::mm" (the name PyTorch's profiler shows)
    int64_t calls = 0;
    double seconds = 0;  // wall clock inside the op's calls
  };
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override;
  // The ops by time, longest first.
  std::vector<Row> rows() const;
  // rows() as a table, per step: op, calls, ms, % of the ops' total; the longest `limit` ops, then
  // one row of the rest.
  std::string table(int64_t steps, size_t limit = 25) const;

 private:
  std::map<std::string, Row> by_op_;
};

}  // namespace remat::bench
