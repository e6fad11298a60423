// The arithmetic bounds of bench/ops (see op_bounds.h).
#include "bench/op_bounds.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "kernels/cpu/eigen.h"
#include "kernels/cpu/random.h"
#include "kernels/cpu/vec_exp.h"
#include "remat.h"

namespace remat::bench {

namespace {

// Floats in and out per thread: 2 x 8 KiB, well inside any L1 data cache.
constexpr int64_t kBuffer = 2048;

// One pass of a function over a thread's buffer: out = f(in), as the kernels call it (Eigen's
// packet functions over a float run). `pass` numbers the pass (Philox: its counters).
using Pass = void (*)(float* out, const float* in, uint64_t pass);
using Array = Eigen::Array<float, Eigen::Dynamic, 1>;

void tanh_pass(float* out, const float* in, uint64_t) {
  Eigen::Map<Array>(out, kBuffer) = Eigen::Map<const Array>(in, kBuffer).tanh();
}
void erf_pass(float* out, const float* in, uint64_t) {
  Eigen::Map<Array>(out, kBuffer) = Eigen::Map<const Array>(in, kBuffer).erf();
}
void exp_pass(float* out, const float* in, uint64_t) {
  Eigen::Map<Array>(out, kBuffer) = Eigen::Map<const Array>(in, kBuffer).exp();
}
// kernels/cpu/vec_exp.h's exp16, which softmax's rows and gelu_backward (tanh) call with AVX-512
// (Eigen's exp without it, as those kernels then run).
void exp16_pass(float* out, const float* in, uint64_t) {
#if defined(__AVX512F__)
  for (int64_t i = 0; i < kBuffer; i += 16) _mm512_storeu_ps(out + i, kernels::cpu::exp16(_mm512_loadu_ps(in + i)));
#else
  exp_pass(out, in, 0);
#endif
}
// kBuffer words of Philox4x32-10 (kBuffer / 4 blocks), stored as they come (dropout compares each
// with 1 - p): 16 blocks an instruction stream with AVX-512, as dropout's kernel runs it.
void philox_pass(float* out, const float*, uint64_t pass) {
  const uint64_t first = pass * (kBuffer / 4), seed = 42, offset = 0;
#if defined(__AVX512F__)
  for (int64_t i = 0; i < kBuffer; i += 64) {
    __m512i words[4];
    kernels::cpu::philox4x32_10_x16(first + static_cast<uint64_t>(i / 4), offset, seed, words);
    for (int w = 0; w < 4; ++w) _mm512_storeu_si512(out + i + 16 * w, words[w]);
  }
#else
  for (int64_t i = 0; i < kBuffer; i += 4) {
    const Philox4 r = philox4x32_10(first + static_cast<uint64_t>(i / 4), offset, seed);
    std::memcpy(out + i, r.x, sizeof r.x);
  }
#endif
}

// Elements per second of `pass` on `threads` threads, each over its own buffer of inputs from
// `lo` to `hi` (the range the op feeds the function): the fastest of `samples` samples.
double pass_rate(Pass pass, float lo, float hi, int threads, double min_sample_s, int samples, Clock clock) {
  std::vector<std::vector<float>> in(static_cast<size_t>(threads)), out(in.size());
  for (size_t t = 0; t < in.size(); ++t) {
    in[t].resize(kBuffer);
    out[t].assign(kBuffer, 0.0f);
    for (int64_t i = 0; i < kBuffer; ++i) in[t][i] = lo + (hi - lo) * static_cast<float>((i * 37) % kBuffer) / kBuffer;
  }
  int team = 1;  // the threads OpenMP gave (it may give fewer than asked)
  auto run = [&](int64_t passes) {
    const double t0 = now_seconds(clock);
#pragma omp parallel num_threads(threads)
    {
      const size_t t = static_cast<size_t>(omp_get_thread_num());
      if (t == 0) team = omp_get_num_threads();
      for (int64_t p = 0; p < passes; ++p) pass(out[t].data(), in[t].data(), static_cast<uint64_t>(p));
    }
    return std::max(now_seconds(clock) - t0, 1e-9);
  };
  run(1);  // warm-up: threads started, buffers in cache
  // The passes a sample makes, from the fastest of three timings on the calling thread alone: a
  // parallel region can wait a time slice for a thread on a busy machine, which would make the
  // samples a single pass each, all of it that wait.
  constexpr int64_t kCalibrate = 64;
  double once = 1e9;
  for (int c = 0; c < 3; ++c) {
    const double t0 = now_seconds(clock);
    for (int64_t p = 0; p < kCalibrate; ++p) pass(out[0].data(), in[0].data(), static_cast<uint64_t>(p));
    once = std::min(once, std::max(now_seconds(clock) - t0, 1e-9) / kCalibrate);
  }
  const int64_t passes = std::max<int64_t>(kCalibrate, static_cast<int64_t>(min_sample_s / once));
  double best = 0;
  for (int s = 0; s < samples; ++s) {
    const double seconds = run(passes);
    best = std::max(best, static_cast<double>(passes * kBuffer) * team / seconds);
  }
  volatile float sink = 0;
  for (const auto& o : out) sink = sink + o[kBuffer - 1];
  return best;
}

// Each op's name in `ops` -> what bounds it. GELU's tanh form and its backward need one tanh or exp
// an element (remat's take exp16: the forward as x / (1 + exp(-2u))), SiLU one exp (the sigmoid as
// 1 / (1 + exp(-x)), Eigen's exp), its backward one exp16, softmax one exp16; cross_entropy one
// exp16 in its forward and one more for the backward's softmax (remat's backward takes two: it
// recomputes the row's log-sum-exp rather than keep it); softmax's backward and layer_norm need no
// such function.
const std::map<std::string, ArithmeticBound>& bounds() {
  static const std::map<std::string, ArithmeticBound> table = {
      {"gelu", {"erf", 1}},
      {"gelu (tanh)", {"exp16", 1}},
      {"gelu_backward (tanh)", {"exp16", 1}},
      {"silu", {"exp", 1}},
      {"silu_backward", {"exp16", 1}},
      {"softmax(dim=-1) fwd", {"exp16", 1}},
      {"softmax(dim=-1) fwd+bwd", {"exp16", 1}},
      {"softmax(dim=-1) of masked scores", {"exp16", 1}},
      {"_masked_softmax (causal [L, S] mask)", {"exp16", 1}},
      {"cross_entropy fwd", {"exp16", 1}},
      {"cross_entropy fwd+bwd", {"exp16", 2}},
      {"native_dropout (p=0.1)", {"philox", 1}},
  };
  return table;
}

}  // namespace

FunctionRates measure_function_rates(int threads, double min_sample_s, int samples, Clock clock) {
  FunctionRates r;
  r.tanh = pass_rate(tanh_pass, -4.0f, 4.0f, threads, min_sample_s, samples, clock);
  r.erf = pass_rate(erf_pass, -4.0f, 4.0f, threads, min_sample_s, samples, clock);
  r.exp = pass_rate(exp_pass, -20.0f, 0.0f, threads, min_sample_s, samples, clock);
  r.exp16 = pass_rate(exp16_pass, -20.0f, 0.0f, threads, min_sample_s, samples, clock);
  r.philox = pass_rate(philox_pass, 0.0f, 0.0f, threads, min_sample_s, samples, clock);
  return r;
}

double function_rate(const FunctionRates& rates, const std::string& function) {
  if (function == "tanh") return rates.tanh;
  if (function == "erf") return rates.erf;
  if (function == "exp") return rates.exp;
  if (function == "exp16") return rates.exp16;
  REMAT_CHECK(function == "philox", "ops: no measured function '", function, "' (tanh, erf, exp, exp16 or philox)");
  return rates.philox;
}

std::optional<ArithmeticBound> arithmetic_bound(const std::string& op) {
  auto it = bounds().find(op);
  if (it == bounds().end()) return std::nullopt;
  return it->second;
}

void attach_bound(OpRow& row, const FunctionRates& rates) {
  const std::optional<ArithmeticBound> b = arithmetic_bound(row.op);
  if (!b) return;
  const double rate = function_rate(rates, b->function);
  if (rate <= 0) return;
  double elements = 1;
  for (int64_t d : row.shape) elements *= static_cast<double>(d);
  row.bound_function = b->function;
  row.bound_ms = elements * b->calls_per_element / rate * 1e3;
}

std::string rates_text(const FunctionRates& rates, int threads) {
  std::string text;
  char line[160];
  for (const char* f : {"tanh", "erf", "exp", "exp16", "philox"}) {
    std::snprintf(line, sizeof line, "%-6s (remat's vectorised, L1-resident, %d thread(s) at once): %8.2f G%s/s\n", f,
                  threads, function_rate(rates, f) / 1e9, std::strcmp(f, "philox") == 0 ? "words" : "elements");
    text += line;
  }
  return text;
}

std::string bounds_table(const std::vector<OpRow>& rows) {
  std::string text;
  char line[320];
  for (const OpRow& r : rows) {
    if (r.bound_ms < 0) continue;
    if (text.empty()) {
      std::snprintf(line, sizeof line, "%-38s %-5s %-16s %9s %-7s %9s %9s %9s %9s\n", "op", "dtype", "shape", "ms",
                    "bound", "calls M", "bound ms", "% bound", "torch %");
      text += line;
    }
    const auto b = arithmetic_bound(r.op);
    double elements = 1;
    for (int64_t d : r.shape) elements *= static_cast<double>(d);
    const double calls = b ? elements * b->calls_per_element / 1e6 : -1;
    const double pct = r.remat_ms > 0 ? 100.0 * r.bound_ms / r.remat_ms : -1;
    const double torch_pct = r.torch_ms > 0 ? 100.0 * r.bound_ms / r.torch_ms : -1;
    std::snprintf(line, sizeof line, "%-38s %-5s %-16s %9s %-7s %9s %9.3f %9s %9s\n", r.op.c_str(), r.dtype.c_str(),
                  shape_text(r.shape).c_str(), figure_text("%.3f", r.remat_ms).c_str(), r.bound_function.c_str(),
                  figure_text("%.2f", calls).c_str(), r.bound_ms, figure_text("%.0f%%", pct).c_str(),
                  figure_text("%.0f%%", torch_pct).c_str());
    text += line;
  }
  return text;
}

}  // namespace remat::bench
