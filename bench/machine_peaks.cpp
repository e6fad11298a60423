// The machine's FP32 FMA peak and copy bandwidth (see machine_peaks.h).
#include "bench/machine_peaks.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace remat::bench {

namespace {

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
constexpr const char* kIsa = "AVX-512";
inline Vec vset(float x) { return _mm512_set1_ps(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline float vsum(Vec v) { return _mm512_reduce_add_ps(v); }
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
constexpr const char* kIsa = "AVX2";
inline Vec vset(float x) { return _mm256_set1_ps(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline float vsum(Vec v) {
  float l[8];
  _mm256_storeu_ps(l, v);
  return l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
}
#else
#define REMAT_BENCH_NO_FMA
constexpr const char* kIsa = "none";
#endif

volatile float fma_sink;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

const char* fma_isa() { return kIsa; }

double measure_fma_peak_gflops(int threads, int64_t iters, int samples) {
#ifdef REMAT_BENCH_NO_FMA
  (void)threads;
  (void)iters;
  (void)samples;
  return 0;
#else
  constexpr int kChains = 12;  // enough independent chains to cover the FMA latency on 2 pipes
  auto run = [&] {
#pragma omp parallel num_threads(threads)
    {
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
  run();  // warm-up (and clocks up)
  std::vector<double> times;
  for (int r = 0; r < samples; ++r) {
    const double t0 = now_s();
    run();
    times.push_back(now_s() - t0);
  }
  // The fastest of many short samples: other load on the machine can only slow the loop down.
  const double flops = 2.0 * kLanes * kChains * static_cast<double>(iters) * threads;
  return flops / *std::min_element(times.begin(), times.end()) / 1e9;
#endif
}

double measure_copy_bandwidth(int threads, int64_t floats, int samples) {
  std::vector<float> src(static_cast<size_t>(floats), 1.0f), dst(static_cast<size_t>(floats), 0.0f);
  auto run = [&] {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int t = 0; t < threads; ++t) {
      const int64_t begin = floats * t / threads, end = floats * (t + 1) / threads;
      std::memcpy(dst.data() + begin, src.data() + begin, static_cast<size_t>(end - begin) * sizeof(float));
    }
  };
  run();  // warm-up: both buffers resident
  double fastest = 1e30;
  for (int r = 0; r < samples; ++r) {
    const double t0 = now_s();
    run();
    fastest = std::min(fastest, now_s() - t0);
  }
  return 2.0 * static_cast<double>(floats) * sizeof(float) / fastest;
}

}  // namespace remat::bench
