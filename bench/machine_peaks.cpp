// The machine's FP32 FMA peak and copy bandwidth (see machine_peaks.h): the planner's own
// measurement (checkpoint/cost_model_defaults.h), run longer.
#include "bench/machine_peaks.h"

#include <cstring>

#include "checkpoint/cost_model_defaults.h"

namespace remat::bench {

const char* fma_isa() { return ::remat::fma_isa(); }

double measure_fma_peak_gflops(int threads, int64_t iters, int samples) {
  if (std::strcmp(fma_isa(), "none") == 0) return 0;
  return ::remat::measure_fma_peak_flops(threads, iters, samples) / 1e9;
}

double measure_copy_bandwidth(int threads, int64_t floats, int samples) {
  return ::remat::measure_copy_bandwidth(threads, floats, samples);
}

}  // namespace remat::bench
