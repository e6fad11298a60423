// Tests engine/core/clock.h (c10::getTime, time.perf_counter / time.process_time): both clocks
// are monotonic, and the process's CPU clock advances while the process computes.
#include <catch2/catch.hpp>

#include "remat.h"  // the umbrella header reaches clock.h

using namespace remat;

TEST_CASE("now_seconds: the wall and the CPU clock never run backwards", "[clock]") {
  for (Clock c : {Clock::kWall, Clock::kProcessCpu}) {
    double last = now_seconds(c);
    for (int i = 0; i < 1000; ++i) {
      const double t = now_seconds(c);
      CHECK(t >= last);
      last = t;
    }
  }
  CHECK(now_seconds() >= 0);  // kWall by default
}

TEST_CASE("now_seconds: the CPU clock advances while the process computes", "[clock]") {
  const double cpu0 = now_seconds(Clock::kProcessCpu), wall0 = now_seconds(Clock::kWall);
  volatile double sink = 0;
  while (now_seconds(Clock::kProcessCpu) - cpu0 < 0.01) sink = sink + 1;
  CHECK(now_seconds(Clock::kProcessCpu) - cpu0 >= 0.01);
  CHECK(now_seconds(Clock::kWall) - wall0 > 0);
}
