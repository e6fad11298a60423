// The timing method of bench/dispatch_overhead and of its libtorch peer
// (tools/dispatch_overhead_libtorch.cpp), in one place so both sides time the same way (no
// PyTorch counterpart; torch.utils.benchmark.Timer's blocked_autorange is the analogue).
// Header-only and free of remat but for its clock (engine/core/clock.h, itself free of remat), so
// the peer compiles against libtorch alone.
#pragma once

#include <algorithm>
#include <vector>

#include "engine/core/clock.h"

namespace remat::bench {

// Fastest of `reps` repetitions of the mean time per call over `calls` calls (the least
// disturbed by other load on a shared machine), after a warm-up of calls / 10.
template <class F>
double ns_per_call(const F& f, int calls = 100000, int reps = 21) {
  for (int i = 0; i < calls / 10; ++i) f();  // warm-up
  std::vector<double> samples;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_seconds();
    for (int i = 0; i < calls; ++i) f();
    samples.push_back((now_seconds() - t0) * 1e9 / calls);
  }
  std::sort(samples.begin(), samples.end());
  return samples.front();
}

}  // namespace remat::bench
