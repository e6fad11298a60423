// The bound of the ops of bench/ops that arithmetic limits, not memory (no PyTorch counterpart:
// benchmarks/operator_benchmark reports raw times). GELU's tanh or erf, the exp of softmax and
// cross_entropy and dropout's Philox cost more than moving their bytes, so "% copy" cannot judge
// them. Instead remat's own vectorised function (Eigen's packet tanh, erf and exp and
// kernels/cpu/vec_exp.h's exp16, as the kernels call them; Philox4x32-10 16 blocks at a time) is
// timed over a buffer that stays in L1, on every thread at once, in the same run as the ops; an
// op's bound is the time that function alone needs for the calls the op must make at least, and
// `ops` prints each such row's time against it.
//
//   FunctionRates r = measure_function_rates(2);        // elements per second, 2 threads
//   attach_bound(row, r);                                // row.bound_function, row.bound_ms
//   std::printf("%s", bounds_table(rows).c_str());
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/op_rows.h"
#include "engine/core/clock.h"

namespace remat::bench {

// Elements per second of each function on `threads` threads together, each thread over its own
// L1-resident buffer (Philox: 32-bit words, one an element of dropout's mask). 0: not measured.
struct FunctionRates {
  double tanh = 0, erf = 0, exp = 0, exp16 = 0, philox = 0;
};

// The fastest of `samples` samples of each function, a sample repeating it over the buffer until
// it lasts `min_sample_s` by `clock`.
FunctionRates measure_function_rates(int threads, double min_sample_s = 0.02, int samples = 5,
                                     Clock clock = Clock::kWall);

// The rate of one function by its name ("tanh", "erf", "exp", "exp16" or "philox"); throws remat::Error
// for any other name.
double function_rate(const FunctionRates& rates, const std::string& function);

// What bounds an op of `ops` by arithmetic: its function and the calls per element of the row's
// shape it makes at least (cross_entropy fwd+bwd: the forward's exp and the backward's softmax).
struct ArithmeticBound {
  std::string function;
  double calls_per_element;
};
// By the row's name in `ops`; none for an op that memory bounds.
std::optional<ArithmeticBound> arithmetic_bound(const std::string& op);

// Sets row.bound_function and row.bound_ms (calls / rate, in ms) for an op arithmetic bounds and
// a rate that was measured; leaves other rows alone.
void attach_bound(OpRow& row, const FunctionRates& rates);

// The measured rates, one line each (G elements per second).
std::string rates_text(const FunctionRates& rates, int threads);

// The rows that have a bound: ms, the function, its calls, the bound's ms and the bound over the
// op's time in % (100%: the op takes no longer than its function alone); PyTorch's ms and its %
// beside them where the row has PyTorch's figure. Empty when no row has a bound.
std::string bounds_table(const std::vector<OpRow>& rows);

}  // namespace remat::bench
