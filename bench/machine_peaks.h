// The machine's FP32 FMA peak and copy bandwidth, measured (no PyTorch counterpart:
// benchmarks/operator_benchmark reports raw times). bench/ops and memory_vs_recompute measure them
// in the same run as what they compare against them (and the planner's cost model), since a
// shared machine's clocks and load vary from run to run.
//
//   double peak = measure_fma_peak_gflops(omp_get_max_threads());   // e.g. 490 on 2 AVX-512 cores
//   double bw = measure_copy_bandwidth(omp_get_max_threads());      // bytes/s, read + write
#pragma once

#include <cstdint>

namespace remat::bench {

// GFLOP/s of `threads` threads each running 12 independent FMA chains on the widest vectors the
// build targets, the fastest of `samples` runs of `iters` loop trips. 0 when the build has no
// AVX2/AVX-512 FMA.
double measure_fma_peak_gflops(int threads, int64_t iters = 20'000'000, int samples = 7);
// "AVX-512", "AVX2", or "none".
const char* fma_isa();
// Bytes per second (read plus written) of `threads` threads copying `floats` floats between two
// buffers touched beforehand: the fastest of `samples` copies. What a memory-bound op can reach.
double measure_copy_bandwidth(int threads, int64_t floats = 1 << 20, int samples = 21);

}  // namespace remat::bench
