// Mirrors c10/util/ApproximateClock.h (c10::getTime: the steady clock, for timing) with the
// choice Python's time.perf_counter / time.process_time offers (and torch.utils.benchmark.Timer's
// `timer=`): the one clock of remat's benchmarks and of their libtorch peers. Header-only and
// free of the rest of remat (the C++ standard library and POSIX only), so that
// tools/dispatch_overhead_libtorch.cpp compiles against libtorch alone.
#pragma once

#include <chrono>
#include <time.h>

namespace remat {

// kWall: the steady (monotonic) wall clock. kProcessCpu: the CPU time of every thread of the
// process (CLOCK_PROCESS_CPUTIME_ID), which other load on a shared machine disturbs less.
enum class Clock { kWall, kProcessCpu };

// Seconds since an arbitrary start on `clock`: only differences mean something.
inline double now_seconds(Clock clock = Clock::kWall) {
  if (clock == Clock::kProcessCpu) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace remat
