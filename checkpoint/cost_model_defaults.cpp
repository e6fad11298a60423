// The cost model's default machine (see cost_model_defaults.h).
#include "checkpoint/cost_model_defaults.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cstring>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "checkpoint/offload.h"
#include "engine/core/clock.h"
#include "engine/core/cuda_hooks.h"
#include "ops/functions.h"
#include "engine/core/error.h"
#include "kernels/cpu/x86_intrinsics.h"

namespace remat {

namespace {

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
constexpr int kFlopsPerLane = 2;  // one FMA
constexpr const char* kIsa = "AVX-512";
inline Vec vset(float x) { return _mm512_set1_ps(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline float vsum(Vec v) { return _mm512_reduce_add_ps(v); }
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
constexpr int kFlopsPerLane = 2;
constexpr const char* kIsa = "AVX2";
inline Vec vset(float x) { return _mm256_set1_ps(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline float vsum(Vec v) {
  float l[8];
  _mm256_storeu_ps(l, v);
  return l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
}
#else
typedef float Vec __attribute__((vector_size(16)));  // a multiply and an add per lane
constexpr int kLanes = 4;
constexpr int kFlopsPerLane = 2;
constexpr const char* kIsa = "none";
inline Vec vset(float x) { return Vec{x, x, x, x}; }
inline Vec vfma(Vec a, Vec b, Vec c) { return a * b + c; }
inline float vsum(Vec v) { return v[0] + v[1] + v[2] + v[3]; }
#endif

volatile float fma_sink;


// The fastest of `samples` timed runs of `run` after one warm-up (clocks up, buffers resident):
// other load on the machine can only slow a run down. With a time limit, sampling stops once it
// is spent (after one timed run at least).
template <class Run>
double fastest_seconds(int samples, double time_limit_s, const Run& run) {
  const double start = now_seconds();
  run();
  double fastest = 1e30;
  for (int r = 0; r < samples; ++r) {
    const double t0 = now_seconds();
    run();
    const double t1 = now_seconds();
    fastest = std::min(fastest, t1 - t0);
    if (time_limit_s > 0 && t1 - start >= time_limit_s) break;
  }
  return fastest;
}

int max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// cpu_machine_peaks' samples: an FMA sample is 77 MFLOP (under a millisecond on an AVX-512 core),
// the copy's buffers are 4 MiB each, as bench/ops copies them; each measurement stops sampling
// after 15 ms, so a busy machine delays the first plan by 30 ms at most (and the buffers' pages).
constexpr int64_t kDefaultFmaIters = 200'000;
constexpr int kDefaultFmaSamples = 9;
constexpr int64_t kDefaultCopyFloats = int64_t{1} << 20;
constexpr int kDefaultCopySamples = 15;
constexpr double kDefaultTimeLimitS = 0.015;

}  // namespace

const char* fma_isa() { return kIsa; }

double measure_fma_peak_flops(int threads, int64_t iters, int samples, double time_limit_s) {
  REMAT_CHECK(threads > 0 && iters > 0 && samples > 0 && time_limit_s >= 0, "measure_fma_peak_flops: threads, iters "
              "and samples must be positive and time_limit_s >= 0, got ", threads, ", ", iters, ", ", samples, " and ",
              time_limit_s);
  constexpr int kChains = 12;  // enough independent chains to cover the FMA latency on 2 pipes
  int ran = 1;                 // threads the region got (fewer when called inside a parallel region)
  auto run = [&] {
#pragma omp parallel num_threads(threads)
    {
#ifdef _OPENMP
#pragma omp master
      ran = omp_get_num_threads();
#endif
      // Named accumulators, not an array: GCC keeps an array in memory (a load and store per FMA).
      Vec a0 = vset(0), a1 = vset(1), a2 = vset(2), a3 = vset(3), a4 = vset(4), a5 = vset(5);
      Vec a6 = vset(6), a7 = vset(7), a8 = vset(8), a9 = vset(9), a10 = vset(10), a11 = vset(11);
      const Vec x = vset(0.999999f), y = vset(1e-3f);  // a -> a*x + y converges: stays finite
      for (int64_t i = 0; i < iters; ++i) {
        a0 = vfma(a0, x, y), a1 = vfma(a1, x, y), a2 = vfma(a2, x, y), a3 = vfma(a3, x, y);
        a4 = vfma(a4, x, y), a5 = vfma(a5, x, y), a6 = vfma(a6, x, y), a7 = vfma(a7, x, y);
        a8 = vfma(a8, x, y), a9 = vfma(a9, x, y), a10 = vfma(a10, x, y), a11 = vfma(a11, x, y);
      }
      fma_sink = vsum(a0) + vsum(a1) + vsum(a2) + vsum(a3) + vsum(a4) + vsum(a5) + vsum(a6) + vsum(a7) +
                 vsum(a8) + vsum(a9) + vsum(a10) + vsum(a11);
    }
  };
  const double seconds = fastest_seconds(samples, time_limit_s, run);
  return double{kFlopsPerLane} * kLanes * kChains * static_cast<double>(iters) * ran / seconds;
}

double measure_copy_bandwidth(int threads, int64_t floats, int samples, double time_limit_s) {
  REMAT_CHECK(threads > 0 && floats > 0 && samples > 0 && time_limit_s >= 0, "measure_copy_bandwidth: threads, "
              "floats and samples must be positive and time_limit_s >= 0, got ", threads, ", ", floats, ", ", samples,
              " and ", time_limit_s);
  std::vector<float> src(static_cast<size_t>(floats), 1.0f), dst(static_cast<size_t>(floats), 0.0f);
  auto run = [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const int64_t begin = floats * t / threads, end = floats * (t + 1) / threads;
      std::memcpy(dst.data() + begin, src.data() + begin, static_cast<size_t>(end - begin) * sizeof(float));
    }
  };
  return 2.0 * static_cast<double>(floats) * sizeof(float) / fastest_seconds(samples, time_limit_s, run);
}

const MachinePeaks& cpu_machine_peaks() {
  // A function-local static: initialised once, by the first caller, while any other waits. One
  // thread's figures times the thread count: a sample then needs one free core, not all of them
  // at once, which on a busy machine is the difference between a figure and noise.
  static const MachinePeaks peaks = [] {
    const double threads = max_threads();
    MachinePeaks m;
    m.peak_flops = threads * measure_fma_peak_flops(1, kDefaultFmaIters, kDefaultFmaSamples, kDefaultTimeLimitS);
    m.bandwidth = threads * measure_copy_bandwidth(1, kDefaultCopyFloats, kDefaultCopySamples, kDefaultTimeLimitS);
    return m;
  }();
  return peaks;
}

double cuda_peak_flops(ScalarType dtype) {
  if (dtype == kBFloat16 || dtype == kHalf) return kCUDAPeakFlopsBF16;
  if (dtype == kDouble) return kCUDAPeakFlopsF64;
  return kCUDAPeakFlops;
}

MachinePeaks default_machine_peaks(Device device) {
  if (device.is_cuda()) return MachinePeaks{kCUDAPeakFlops, kCUDABandwidth};
  return cpu_machine_peaks();
}

namespace {

void check_offloads(Device device, const char* who) {
  if (!device.is_cuda()) {
    throw CheckpointError(std::string(who) + ": " + device.str() +
                          " has no host link to price: offload moves CUDA tensors to pinned host memory");
  }
}

}  // namespace

double measure_host_link_bandwidth(Device device, int64_t bytes, int samples) {
  check_offloads(device, "measure_host_link_bandwidth");
  REMAT_CHECK(bytes > 0 && samples > 0, "measure_host_link_bandwidth: bytes and samples must be positive, got ",
              bytes, " and ", samples);
  offload_detail::PinnedOffloadHooks* hooks = offload_detail::pinned_offload_hooks();
  REMAT_CHECK(hooks != nullptr, "measure_host_link_bandwidth: no pinned transfers on ", device.str(),
              " (CUDA is not available)");
  const Tensor t = empty({bytes / 4}, TensorOptions().device(device));
  double to_host = 1e30, to_device = 1e30;
  for (int i = 0; i <= samples; ++i) {  // the first of each is a warm-up
    std::shared_ptr<void> ready;
    const double t0 = now_seconds();
    Tensor host = hooks->copy_to_pinned_host(t, &ready);
    hooks->wait(ready);
    const double t1 = now_seconds();
    Tensor back = hooks->copy_to_device(host, device, &ready);
    hooks->wait(ready);
    const double t2 = now_seconds();
    if (i > 0) to_host = std::min(to_host, t1 - t0), to_device = std::min(to_device, t2 - t1);
  }
  return static_cast<double>(t.nbytes()) / std::max(to_host, to_device);
}

double default_host_link_bandwidth(Device device) {
  check_offloads(device, "default_host_link_bandwidth");
  if (cuda::is_emulated()) return kH200HostLinkBandwidth;
  static const double measured = measure_host_link_bandwidth(device, int64_t{64} << 20, 3);
  return measured;
}

const char* host_link_bandwidth_source(Device device) {
  check_offloads(device, "host_link_bandwidth_source");
  return cuda::is_emulated() ? "PCIe 5.0 x16 datasheet (emulated device: no link)" : "measured";
}

}  // namespace remat
