// Tests checkpoint/cost_model_defaults.{h,cpp}: the CPU's figures are measured once per process
// and cached (the same object on every call, from every thread), they are what a RuntimeEstimator
// and the planner use when given none, CUDA's are the documented ones, and the measurements'
// error paths. Never a timing: a measured figure is only checked to be positive and finite.
#include <catch2/catch.hpp>

#include <cmath>
#include <thread>
#include <vector>

#include "remat.h"
#include "tests/testing/matchers.h"

using namespace remat;
using Catch::Matchers::Contains;
using remat::testing::What;

TEST_CASE("cost model defaults: the CPU's are measured once, on first use, and cached", "[estimator]") {
  // First use from several threads at once: one measurement, one object, for all of them.
  std::vector<const MachinePeaks*> seen(4, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) threads.emplace_back([&seen, i] { seen[i] = &cpu_machine_peaks(); });
  for (std::thread& t : threads) t.join();
  const MachinePeaks& first = cpu_machine_peaks();
  const MachinePeaks& second = cpu_machine_peaks();
  CHECK(&first == &second);
  for (const MachinePeaks* p : seen) CHECK(p == &first);
  CHECK(second.peak_flops == first.peak_flops);
  CHECK(second.bandwidth == first.bandwidth);
  CHECK(std::isfinite(first.peak_flops));
  CHECK(first.peak_flops > 0);
  CHECK(std::isfinite(first.bandwidth));
  CHECK(first.bandwidth > 0);
}

TEST_CASE("cost model defaults: a RuntimeEstimator given no machine uses the measured one on the CPU",
          "[estimator]") {
  const MachinePeaks& cpu = cpu_machine_peaks();
  RuntimeEstimator est(EstimateMode::kCostModel, Device{kCPU});
  CHECK(est.peak_flops() == cpu.peak_flops);
  CHECK(est.bandwidth() == cpu.bandwidth);
  CHECK(default_machine_peaks(Device{kCPU}).peak_flops == cpu.peak_flops);
  CHECK(default_machine_peaks(Device{kMeta}).bandwidth == cpu.bandwidth);
  // CUDA: the device's documented figures.
  CHECK(default_machine_peaks(Device{kCUDA}).peak_flops == kCUDAPeakFlops);
  CHECK(default_machine_peaks(Device{kCUDA}).bandwidth == kCUDABandwidth);
  // Given figures win.
  RuntimeEstimator given(EstimateMode::kCostModel, Device{kCPU}, 2.0e11, 3.0e10);
  CHECK(given.peak_flops() == 2.0e11);
  CHECK(given.bandwidth() == 3.0e10);
}

TEST_CASE("cost model defaults: one uncached measurement, and its error paths", "[estimator]") {
  CHECK(measure_fma_peak_flops(1, 1000, 2) > 0);
  CHECK(measure_fma_peak_flops(2, 1000, 1000, 1e-3) > 0);  // stops sampling after a millisecond
  CHECK(measure_copy_bandwidth(2, 4096, 2) > 0);
  const std::string isa = fma_isa();
  CHECK((isa == "AVX-512" || isa == "AVX2" || isa == "none"));
  REQUIRE_THROWS_MATCHES(measure_fma_peak_flops(0, 1000, 2), Error,
                         What(Contains("measure_fma_peak_flops: threads, iters and samples must be positive and "
                                       "time_limit_s >= 0, got 0, 1000, 2 and 0")));
  REQUIRE_THROWS_MATCHES(measure_fma_peak_flops(1, -1, 2), Error, What(Contains("got 1, -1, 2 and 0")));
  REQUIRE_THROWS_MATCHES(measure_fma_peak_flops(1, 1000, 2, -1.0), Error, What(Contains("got 1, 1000, 2 and -1")));
  REQUIRE_THROWS_MATCHES(measure_copy_bandwidth(1, 4096, 0), Error,
                         What(Contains("measure_copy_bandwidth: threads, floats and samples must be positive and "
                                       "time_limit_s >= 0, got 1, 4096, 0 and 0")));
}

TEST_CASE("default_host_link_bandwidth: the CPU has no host link to price", "[cost_model][offload][errors]") {
  CHECK_THROWS_WITH(default_host_link_bandwidth(Device{kCPU}),
                    "default_host_link_bandwidth: cpu has no host link to price: offload moves CUDA tensors to pinned "
                    "host memory");
  CHECK_THROWS_WITH(host_link_bandwidth_source(Device{kCPU}),
                    "host_link_bandwidth_source: cpu has no host link to price: offload moves CUDA tensors to pinned "
                    "host memory");
  CHECK_THROWS_WITH(measure_host_link_bandwidth(Device{kCPU}, 1 << 20, 1),
                    "measure_host_link_bandwidth: cpu has no host link to price: offload moves CUDA tensors to pinned "
                    "host memory");
}
