// The machine's FP32 FMA peak, measured (no PyTorch counterpart: benchmarks/operator_benchmark
// reports raw times). bench/ops and memory_vs_recompute measure it in the same run as what they
// compare against it, since a shared machine's clocks and load vary from run to run.
//
//   double peak = measure_fma_peak_gflops(omp_get_max_threads());   // e.g. 490 on 2 AVX-512 cores
#pragma once

#include <cstdint>

namespace remat::bench {

// GFLOP/s of `threads` threads each running 12 independent FMA chains on the widest vectors the
// build targets, the fastest of `samples` runs of `iters` loop trips. 0 when the build has no
// AVX2/AVX-512 FMA.
double measure_fma_peak_gflops(int threads, int64_t iters = 20'000'000, int samples = 7);
// "AVX-512", "AVX2", or "none".
const char* fma_isa();

}  // namespace remat::bench
