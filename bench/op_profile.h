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
//
// Each call also counts the bytes it must move at least (bytes_moved): what sets a memory-bound
// op's time. roofline() sets the ops other than the matrix products against a copy bandwidth: the
// time those bytes take at it is what the step cannot go below without moving fewer bytes.
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
    double bytes = 0;    // bytes_moved, summed over the calls
  };
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override;
  // The ops by time, longest first.
  std::vector<Row> rows() const;
  // rows() as a table, per step: op, calls, ms, % of the ops' total; the longest `limit` ops, then
  // one row of the rest.
  std::string table(int64_t steps, size_t limit = 25) const;
  // Two lines: the matrix products' time (is_matmul), then the other ops' time, the bytes they
  // moved and the time those bytes take at copy_bytes_per_s (read plus written, as
  // measure_copy_bandwidth gives it), all per step.
  std::string roofline(int64_t steps, double copy_bytes_per_s) const;

  // mm, addmm, bmm, baddbmm, addbmm, matmul: the ops bound by arithmetic, not by memory.
  static bool is_matmul(const std::string& op);
  // The least a call moves, from its schema: each distinct tensor argument read once (a broadcast
  // dim counted once), each argument it mutates written too (an out= argument is counted read as
  // well), each fresh output written. A view (every return aliases an argument, nothing mutated)
  // moves nothing.
  static double bytes_moved(const FunctionSchema& schema, const std::vector<IValue>& args,
                            const std::vector<IValue>& out);
 private:
  std::map<std::string, Row> by_op_;
};

}  // namespace remat::bench
