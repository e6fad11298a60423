// Op throughput against the machine's own limits, in the spirit of PyTorch's operator
// microbenchmarks (benchmarks/operator_benchmark): the copy bandwidth and FP32 FMA peak measured in
// the same run, then remat::mm against Eigen's, OpenBLAS's and oneDNN's own GEMM (square, and at
// the GPT's shapes in f32 and bf16), elementwise ops and
// reductions as GB/s against copy bandwidth, and the transformer ops (softmax, layer_norm,
// cross_entropy, dropout, AdamW) forward and forward+backward through autograd, each in f32 and bf16.
//
//   ops [--quick] [--threads N] [--clock wall|cpu] [--only TEXT] [--list-rows]
//       [--compare FILE | --beside COMMAND [--rounds N]] [--json FILE]
//
// --quick: small sizes and few repetitions (a CI smoke run, seconds). --threads N: the thread count
// of remat's loops (OpenMP), of Eigen's GEMM and of OpenBLAS (default: OpenMP's, the core count).
// --clock cpu: time by the process's CPU time instead of the wall clock, so that time slices given
// to other processes on a busy machine do not count (meaningful with --threads 1 only).
// --only TEXT: only the rows whose op name holds TEXT, and no GEMM tables.
// PyTorch side by side: --list-rows, --compare FILE and --json FILE (bench/op_rows.h, bench/torch_ops.py),
// or --beside COMMAND (say `~/.cache/remat/venv/bin/python bench/torch_ops.py --serve`): each row
// timed --rounds times (3) in turn with PyTorch's, so that both see the machine alike
// (bench/peer_process.h).
// Figures are medians over repetitions after a warm-up; a sample is one or more calls (enough to
// last a few milliseconds). GB = 1e9 bytes; bytes are the minimum an op must move (every input
// read once, every output written once), so 100% of copy bandwidth is the best a memory-bound op
// can do.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bench/machine_peaks.h"
#include "bench/op_bounds.h"
#include "bench/op_rows.h"
#include "bench/peer_process.h"
#include "kernels/cpu/eigen.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/cpu/x86_intrinsics.h"
#include "remat.h"

using namespace remat;

namespace {

// ---------------------------------------------------------------------------------------------
// sizes (full run / --quick)
// ---------------------------------------------------------------------------------------------

struct Sizes {
  int64_t copy_floats;           // bandwidth: src and dst of this many floats each
  int64_t fma_iters;             // FMA peak: loop trips per thread per sample
  int fma_samples;               // FMA peak: the best of this many samples
  std::vector<int64_t> mm_n;     // square GEMM sizes
  int64_t gpt_scale;             // GPT-shape GEMMs: config A's sizes divided by this
  int64_t rows, cols;            // elementwise and reductions: [rows, cols] f32
  int64_t norm_rows, norm_cols;  // softmax and layer_norm: [batch*seq, d]
  int64_t ce_rows, ce_classes;   // cross_entropy logits: [batch*seq, vocab]
  int reps;                      // samples per figure (median)
  double min_sample_s;           // a sample repeats the call until it lasts this long
};

const Sizes kFull = {16 << 20, 10'000'000, 21, {256, 1024, 2048}, 1, 4096, 4096, 8 * 128, 1024, 1024, 4096, 7, 0.02};
const Sizes kQuick = {1 << 20, 2'000'000, 5, {64, 128, 256}, 4, 1024, 1024, 128, 256, 128, 512, 3, 0.002};

// ---------------------------------------------------------------------------------------------
// timing
// ---------------------------------------------------------------------------------------------

bool g_cpu_clock = false;  // --clock cpu
bool g_list_only = false;  // --list-rows: the rows are recorded, nothing is timed or printed

// The bandwidth rows of this run, and PyTorch's figures for them (--compare).
std::vector<bench::OpRow> g_rows;
int g_threads = 1;
const bench::TorchFigures* g_torch = nullptr;
// --beside: PyTorch's figures asked of this peer row by row, in turn with remat's, --rounds times.
bench::PeerProcess* g_beside = nullptr;
int g_rounds = 1;
std::string g_only;  // --only: the rows whose op name holds this text (all when empty)
bench::FunctionRates g_rates;  // the arithmetic bounds' functions (bench/op_bounds.h), measured in this run
double g_fma_peak = 0;         // FP32 FMA GFLOP/s measured in this run (0: not measured)

double now_s() { return now_seconds(g_cpu_clock ? Clock::kProcessCpu : Clock::kWall); }

// Median seconds per call of f: one warm-up call, then `reps` samples, each repeating f until it
// lasts min_sample_s (the repeat count is fixed from the warm-up).
double median_seconds(const std::function<void()>& f, const Sizes& s) {
  if (g_list_only) return 1.0;
  double t0 = now_s();
  f();
  double once = std::max(now_s() - t0, 1e-9);
  int calls = std::max(1, static_cast<int>(s.min_sample_s / once));
  std::vector<double> samples;
  for (int r = 0; r < s.reps; ++r) {
    double a = now_s();
    for (int i = 0; i < calls; ++i) f();
    samples.push_back((now_s() - a) / calls);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// ---------------------------------------------------------------------------------------------
// machine limits
// ---------------------------------------------------------------------------------------------

// Each thread copies its contiguous share of src into dst (what a memory-bound parallel op does).
void parallel_copy(float* dst, const float* src, int64_t n, int threads) {
#pragma omp parallel num_threads(threads)
  {
    int64_t per = (n + omp_get_num_threads() - 1) / omp_get_num_threads();
    int64_t b = std::min(n, per * omp_get_thread_num()), e = std::min(n, b + per);
    if (b < e) std::memcpy(dst + b, src + b, static_cast<size_t>(e - b) * sizeof(float));
  }
}

struct Bandwidth {
  double parallel_gbs;  // N threads, reused buffers
  double single_gbs;    // one memcpy, reused buffers
  // The reference for every "% copy" below: the faster of the two (with more threads than free
  // cores, the parallel copy can be the slower one).
  double reference() const { return std::max(parallel_gbs, single_gbs); }
  double fresh_gbs;     // N threads into a freshly allocated buffer (page faults included, as an op's output)
};

Bandwidth measure_copy(const Sizes& s, int threads) {
  const int64_t n = s.copy_floats;
  const double bytes = 2.0 * n * sizeof(float);  // read + write
  float* src = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
  float* dst = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
  for (int64_t i = 0; i < n; ++i) src[i] = static_cast<float>(i & 1023);
  std::memset(dst, 0, n * sizeof(float));
  Bandwidth b;
  b.parallel_gbs = bytes / median_seconds([&] { parallel_copy(dst, src, n, threads); }, s) / 1e9;
  b.single_gbs = bytes / median_seconds([&] { std::memcpy(dst, src, n * sizeof(float)); }, s) / 1e9;
  b.fresh_gbs = bytes /
                median_seconds(
                    [&] {
                      float* fresh = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
                      parallel_copy(fresh, src, n, threads);
                      std::free(fresh);
                    },
                    s) /
                1e9;
  std::free(src);
  std::free(dst);
  return b;
}

// ---------------------------------------------------------------------------------------------
// tables
// ---------------------------------------------------------------------------------------------

// Standard normal values of `dtype` (drawn in f32, then rounded once).
Tensor seeded(const Shape& shape, uint64_t seed, bool requires_grad = false, ScalarType dtype = kFloat) {
  Generator gen(seed);
  Tensor t = randn(shape, TensorOptions().dtype(kFloat), &gen);
  if (dtype != kFloat) t = t.to(dtype);
  if (requires_grad) t.requires_grad_();
  return t;
}

// The dtypes every memory-bound section runs in: what the step trains in (f32, or bf16 throughout).
constexpr ScalarType kBandwidthDtypes[] = {kFloat, kBFloat16};

const char* dtype_name(ScalarType t) { return t == kBFloat16 ? "bf16" : "f32"; }

// A section's title and column header, printed before its first row (with --only a section may
// have none).
std::string g_pending_header;

// rate, share: the section's own two columns after ms.
void print_bandwidth_header(const char* title, const char* rate = "GB/s", const char* share = "% copy") {
  if (g_list_only) return;
  char columns[160];
  std::snprintf(columns, sizeof columns, "%-34s %-5s %-16s %10s %10s %8s", "op", "dtype", "shape", "ms", rate, share);
  g_pending_header = std::string("\n") + title + "\n" + columns +
                     (g_torch != nullptr || g_beside != nullptr ? bench::compare_header(g_beside != nullptr) : "") + "\n";
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Times f (the op of one row); with --beside, round after round of remat's median, then
// PyTorch's for the same row, asked of the peer (bench/peer_process.h); the row's figures are the
// medians over the rounds. Returns remat's seconds (1 with --list-rows); fills row.
double time_row(const Sizes& s, bench::OpRow& row, const std::function<void()>& f) {
  double seconds = 1.0;
  if (!g_list_only) {
    std::vector<double> remat_s, torch_ms, torch_out_ms, ratios;
    for (int r = 0; r < g_rounds; ++r) {
      remat_s.push_back(median_seconds(f, s));
      if (g_beside == nullptr) continue;
      const auto fig = bench::parse_torch_row_answer(g_beside->command(), row,
                                                     g_beside->ask(bench::torch_row_request(row)));
      torch_ms.push_back(fig.ms);
      torch_out_ms.push_back(fig.out_ms);
      ratios.push_back(remat_s.back() * 1e3 / fig.ms);
    }
    seconds = median_of(remat_s);
    row.remat_ms = seconds * 1e3;
    if (g_beside != nullptr) {
      row.torch_ms = median_of(torch_ms);
      const bool has_out = std::all_of(torch_out_ms.begin(), torch_out_ms.end(), [](double v) { return v >= 0; });
      row.torch_out_ms = has_out ? median_of(torch_out_ms) : -1;
      row.ratio_min = *std::min_element(ratios.begin(), ratios.end());
      row.ratio_max = *std::max_element(ratios.begin(), ratios.end());
    }
  }
  if (g_torch != nullptr) {
    std::vector<bench::OpRow> one = {row};
    bench::attach_torch_figures(one, *g_torch);
    row = one[0];
  }
  return seconds;
}

// Prints a timed row: its name, dtype and shape, then `figures` (the section's own columns), then
// PyTorch's beside it when there is a peer or a --compare file.
void print_row(const bench::OpRow& row, const std::string& figures) {
  std::printf("%s", g_pending_header.c_str());
  g_pending_header.clear();
  std::printf("%-34s %-5s %-16s %s", row.op.c_str(), row.dtype.c_str(), bench::shape_text(row.shape).c_str(),
              figures.c_str());
  std::printf("%s\n", g_torch != nullptr || g_beside != nullptr ? bench::compare_columns(row, g_beside != nullptr).c_str() : "");
}

// Times and prints a row of a memory-bound section: ms, GB/s of `bytes`, and % of the copy bandwidth.
void print_bandwidth_row(const Sizes& s, const std::string& op, ScalarType dtype, const Shape& shape,
                         const std::function<void()>& f, double bytes, double copy_gbs) {
  if (!g_only.empty() && op.find(g_only) == std::string::npos) return;
  bench::OpRow row{op, dtype_name(dtype), shape, g_threads};
  const double seconds = time_row(s, row, f);
  if (!g_list_only) row.pct_copy = 100.0 * bytes / seconds / 1e9 / copy_gbs;
  bench::attach_bound(row, g_rates);
  g_rows.push_back(row);
  if (g_list_only) return;
  char figures[64];
  std::snprintf(figures, sizeof figures, "%10.3f %10.1f %7.0f%%", seconds * 1e3, bytes / seconds / 1e9, row.pct_copy);
  print_row(row, figures);
}

void mm_section(const Sizes& s, double peak_gflops) {
  std::printf("\nmm, f32, square n x n (GFLOP/s = 2n^3 / time; remat::mm runs %s through the dispatcher)\n",
              kernels::cpu::gemm_backend());
  std::printf("%6s %12s %12s %12s %16s %10s\n", "n", "remat::mm", "Eigen", "OpenBLAS", "% fastest lib", "% peak");
  for (int64_t n : s.mm_n) {
    const double flops = 2.0 * n * n * n;
    Tensor a = seeded({n, n}, 1), b = seeded({n, n}, 2);
    double t_remat = median_seconds([&] { Tensor c = mm(a, b); }, s);

    Eigen::MatrixXf ea = Eigen::MatrixXf::Random(n, n), eb = Eigen::MatrixXf::Random(n, n), ec(n, n);
    double t_eigen = median_seconds([&] { ec.noalias() = ea * eb; }, s);

    std::vector<float> pa(static_cast<size_t>(n * n), 0.5f), pb(static_cast<size_t>(n * n), 0.25f),
        pc(static_cast<size_t>(n * n));
    const int ni = static_cast<int>(n);
    double t_blas = median_seconds(
        [&] {
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, pa.data(), ni, pb.data(), ni,
                      0.0f, pc.data(), ni);
        },
        s);

    double g_remat = flops / t_remat / 1e9, g_eigen = flops / t_eigen / 1e9, g_blas = flops / t_blas / 1e9;
    char peak[32] = "n/a";
    if (peak_gflops > 0) std::snprintf(peak, sizeof peak, "%.0f%%", 100.0 * g_remat / peak_gflops);
    std::printf("%6lld %12.1f %12.1f %12.1f %15.0f%% %10s\n", static_cast<long long>(n), g_remat, g_eigen, g_blas,
                100.0 * g_remat / std::max(g_eigen, g_blas), peak);
  }
}

// ---------------------------------------------------------------------------------------------
// GEMM at the GPT's shapes
// ---------------------------------------------------------------------------------------------

// One product of bench/memory_vs_recompute's GPT (config A: batch 8, seq 128, d_model 256, 4
// heads): [batch x] (m x k) @ (k x n), with a or b transposed in memory as the step has them.
struct GptGemm {
  const char* name;
  int64_t batch, m, n, k;
  bool trans_a, trans_b;
};

std::vector<GptGemm> gpt_gemms(int64_t scale) {
  const int64_t bt = 1024 / scale, c = 256 / scale, t = 128 / scale, d = 64 / scale, bh = 32;
  return {
      {"qkv      x @ W^T", 1, bt, 3 * c, c, false, true},   {"fc1      x @ W^T", 1, bt, 4 * c, c, false, true},
      {"fc2      h @ W^T", 1, bt, c, 4 * c, false, true},   {"fc1 dx   g @ W", 1, bt, c, 4 * c, false, false},
      {"fc1 dW^T x^T @ g", 1, c, 4 * c, bt, true, false},   {"fc2 dW^T h^T @ g", 1, 4 * c, c, bt, true, false},
      {"scores   q @ k^T", bh, t, t, d, false, true},       {"out      P @ v", bh, t, d, t, false, false},
      {"dv       P^T @ dy", bh, t, d, t, true, false},
  };
}

// The problem as remat's kernels take it: dense operands, a/b transposed in memory if asked.
kernels::cpu::StridedGemm strided(const GptGemm& g) {
  kernels::cpu::StridedGemm p;
  p.m = g.m;
  p.n = g.n;
  p.k = g.k;
  size_t r = 0;
  if (g.batch > 1) {
    p.batch_dims = 1;
    p.batch[0] = g.batch;
    p.a[0] = g.m * g.k;
    p.b[0] = g.k * g.n;
    p.c[0] = g.m * g.n;
    r = 1;
  }
  p.a[r] = g.trans_a ? 1 : g.k;
  p.a[r + 1] = g.trans_a ? g.m : 1;
  p.b[r] = g.trans_b ? 1 : g.n;
  p.b[r + 1] = g.trans_b ? g.k : 1;
  p.c[r] = g.n;
  p.c[r + 1] = 1;
  return p;
}

// OpenBLAS on the same problem: one sgemm, or one per batch entry spread over the threads.
void openblas_gemm(const GptGemm& g, const float* a, const float* b, float* c, int threads) {
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  auto one = [&](int64_t i) {
    cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans, g.trans_b ? CblasTrans : CblasNoTrans, m, n, k,
                1.0f, a + i * g.m * g.k, g.trans_a ? m : k, b + i * g.k * g.n, g.trans_b ? k : n, 0.0f,
                c + i * g.m * g.n, n);
  };
  if (g.batch == 1) {
    one(0);
    return;
  }
#pragma omp parallel for num_threads(threads)
  for (int64_t i = 0; i < g.batch; ++i) one(i);
}

void gpt_gemm_section(const Sizes& s, double peak_gflops, int threads) {
  namespace cpu = kernels::cpu;
  const bool avx512 = cpu::onednn::has_avx512();
  std::printf("\nGEMM at the GPT's shapes (config A%s), GFLOP/s; remat = the kernel remat::mm/bmm run "
              "(%s%s); oneDNN: its matmul primitive; n/a: oneDNN has no optimised implementation here\n",
              s.gpt_scale == 1 ? "" : ", scaled down", cpu::gemm_backend(),
              cpu::onednn::built() && !avx512 ? ", OpenBLAS for a transposed a with k >= 512 without AVX-512" : "");
  std::printf("%-18s %14s %8s %8s %8s %7s %9s %9s   %s\n", "product", "[b x] m x n x k", "remat", "oneDNN",
              "OpenBLAS", "% peak", "bf16 rmt", "bf16 DNN", "oneDNN f32 / bf16 implementation");
  for (const GptGemm& g : gpt_gemms(s.gpt_scale)) {
    const double flops = 2.0 * g.batch * g.m * g.n * g.k;
    const cpu::StridedGemm p = strided(g);
    std::vector<float> a(static_cast<size_t>(g.batch * g.m * g.k), 0.5f), b(static_cast<size_t>(g.batch * g.k * g.n), 0.25f),
        c(static_cast<size_t>(g.batch * g.m * g.n));
    std::vector<BFloat16> ah(a.size(), BFloat16(0.5f)), bh(b.size(), BFloat16(0.25f)), ch(c.size());
    auto gflops = [&](const std::function<void()>& f) { return flops / median_seconds(f, s) / 1e9; };
    const double g_remat = gflops([&] { cpu::gemm_batched<float>(p, 1.0f, a.data(), b.data(), 0.0f, c.data()); });
    const std::string impl_f32 = cpu::onednn::implementation(cpu::onednn::DataType::Float, p);
    const std::string impl_bf16 = cpu::onednn::implementation(cpu::onednn::DataType::BFloat16, p);
    char dnnl_f32[16] = "n/a", dnnl_bf16[16] = "n/a";
    if (!impl_f32.empty() && impl_f32.rfind("ref", 0) != 0)
      std::snprintf(dnnl_f32, sizeof dnnl_f32, "%.1f", gflops([&] {
                      cpu::onednn::matmul(cpu::onednn::DataType::Float, p, 1.0f, a.data(), b.data(), 0.0f, c.data(), nullptr);
                    }));
    if (!impl_bf16.empty() && impl_bf16.rfind("ref", 0) != 0)
      std::snprintf(dnnl_bf16, sizeof dnnl_bf16, "%.1f", gflops([&] {
                      cpu::onednn::matmul(cpu::onednn::DataType::BFloat16, p, 1.0f, ah.data(), bh.data(), 0.0f,
                                          ch.data(), nullptr);
                    }));
    const double g_blas = gflops([&] { openblas_gemm(g, a.data(), b.data(), c.data(), threads); });
    const double g_bf16 = gflops([&] {
      cpu::gemm_batched<BFloat16>(p, BFloat16(1.0f), ah.data(), bh.data(), BFloat16(0.0f), ch.data());
    });
    char shape[40], peak[16] = "n/a";
    if (g.batch > 1)
      std::snprintf(shape, sizeof shape, "%lld x %lldx%lldx%lld", (long long)g.batch, (long long)g.m, (long long)g.n,
                    (long long)g.k);
    else
      std::snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)g.m, (long long)g.n, (long long)g.k);
    if (peak_gflops > 0) std::snprintf(peak, sizeof peak, "%.0f%%", 100.0 * g_remat / peak_gflops);
    std::printf("%-18s %14s %8.1f %8s %8.1f %7s %9.1f %9s   %s / %s\n", g.name, shape, g_remat, dnnl_f32, g_blas, peak,
                g_bf16, dnnl_bf16, impl_f32.empty() ? "-" : impl_f32.c_str(), impl_bf16.empty() ? "-" : impl_bf16.c_str());
  }
}

// Bytes below: every input read once, every output written once, in the op's dtype (e bytes an
// element; a Bool mask 1 byte, an int64 target 8).
void pointwise_section(const Sizes& s, double copy_gbs) {
  const Shape shape = {s.rows, s.cols};
  const double n = static_cast<double>(s.rows * s.cols);
  print_bandwidth_header("elementwise and copies (bytes: inputs read + output written)");
  for (ScalarType dt : kBandwidthDtypes) {
    const double e = static_cast<double>(elementSize(dt));
    Tensor a = seeded(shape, 3, false, dt), b = seeded(shape, 4, false, dt);
    auto row = [&](const char* op, double bytes, const std::function<void()>& f) {
      print_bandwidth_row(s, op, dt, shape, f, bytes, copy_gbs);
    };
    row("add  (a + b)", 3 * n * e, [&] { Tensor c = a + b; });
    row("mul  (a * b)", 3 * n * e, [&] { Tensor c = a * b; });
    row("gelu", 2 * n * e, [&] { Tensor c = gelu(a); });
    row("relu", 2 * n * e, [&] { Tensor c = relu(a); });
    Tensor acc = a.clone();
    row("add_ (acc += b, in place)", 3 * n * e, [&] { acc.add_(b); });
    row("clone", 2 * n * e, [&] { Tensor c = a.clone(); });
    Tensor at = a.transpose(0, 1);
    row("contiguous (of a transpose)", 2 * n * e, [&] { Tensor c = at.contiguous(); });
    const ScalarType other = dt == kFloat ? kBFloat16 : kFloat;
    const std::string to = std::string("to(") + dtype_name(other) + ")";
    row(to.c_str(), n * e + n * static_cast<double>(elementSize(other)), [&] { Tensor c = a.to(other); });
  }

  print_bandwidth_header("reductions (bytes: input read + output written)");
  for (ScalarType dt : kBandwidthDtypes) {
    const double e = static_cast<double>(elementSize(dt));
    Tensor a = seeded(shape, 3, false, dt);
    auto row = [&](const char* op, double bytes, const std::function<void()>& f) {
      print_bandwidth_row(s, op, dt, shape, f, bytes, copy_gbs);
    };
    row("sum (all)", n * e + e, [&] { Tensor c = sum(a); });
    row("sum (last dim)", (n + s.rows) * e, [&] { Tensor c = sum(a, {-1}); });
    row("sum (dim 0: a bias gradient)", (n + s.cols) * e, [&] { Tensor c = sum(a, {0}); });
    row("mean (all)", n * e + e, [&] { Tensor c = mean(a); });
  }
}

void transformer_section(const Sizes& s, double copy_gbs) {
  print_bandwidth_header("transformer ops (fwd+bwd: forward, then .backward() through autograd; minimum bytes of both)");
  for (ScalarType dt : kBandwidthDtypes) {
    const double e = static_cast<double>(elementSize(dt));
    {  // softmax over the last dim. fwd: read x, write y. bwd: read dy and y, write dx.
      const Shape shape = {s.norm_rows, s.norm_cols};
      const double n = static_cast<double>(s.norm_rows * s.norm_cols);
      Tensor x = seeded(shape, 5, /*requires_grad=*/true, dt), dy = seeded(shape, 6, false, dt), xd = x.detach();
      print_bandwidth_row(s, "softmax(dim=-1) fwd", dt, shape, [&] { Tensor y = softmax(xd, -1); },
                          2 * n * e, copy_gbs);
      print_bandwidth_row(s, "softmax(dim=-1) fwd+bwd", dt, shape, [&] {
                            x.set_grad(Tensor());
                            softmax(x, -1).backward(dy);
                          },
                          5 * n * e, copy_gbs);
    }
    {  // layer_norm with weight and bias. fwd: read x, write y (mean/rstd and w, b are one row each).
       // bwd: read dy and x, write dx (dw, db: one row each).
      const int64_t d = s.norm_cols;
      const Shape shape = {s.norm_rows, d};
      const double n = static_cast<double>(s.norm_rows * d);
      const double rows_bytes = 4.0 * d * e;  // w, b read; dw, db written
      Tensor x = seeded(shape, 7, true, dt), dy = seeded(shape, 8, false, dt), xd = x.detach();
      Tensor w = ones({d}, TensorOptions().dtype(dt)).requires_grad_(), b = zeros({d}, TensorOptions().dtype(dt)).requires_grad_();
      Tensor wd = w.detach(), bd = b.detach();
      print_bandwidth_row(s, "layer_norm fwd", dt, shape, [&] { Tensor y = layer_norm(xd, {d}, wd, bd); },
                          2 * n * e, copy_gbs);
      print_bandwidth_row(s, "layer_norm fwd+bwd", dt, shape, [&] {
                            x.set_grad(Tensor());
                            w.set_grad(Tensor());
                            b.set_grad(Tensor());
                            layer_norm(x, {d}, w, b).backward(dy);
                          },
                          5 * n * e + rows_bytes, copy_gbs);
    }
    {  // cross_entropy (mean over rows). fwd: read logits (targets: one int64 per row). bwd: read
       // logits, write dlogits.
      const Shape shape = {s.ce_rows, s.ce_classes};
      const double n = static_cast<double>(s.ce_rows * s.ce_classes);
      std::vector<double> idx(static_cast<size_t>(s.ce_rows));
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<double>((i * 7919) % s.ce_classes);
      Tensor targets = from_vector(idx, {s.ce_rows}, TensorOptions().dtype(kLong));
      Tensor logits = seeded(shape, 9, true, dt), ld = logits.detach();
      const double target_bytes = 8.0 * s.ce_rows;
      print_bandwidth_row(s, "cross_entropy fwd", dt, shape,
                          [&] { Tensor l = cross_entropy(ld, targets); }, n * e + target_bytes,
                          copy_gbs);
      print_bandwidth_row(s, "cross_entropy fwd+bwd", dt, shape, [&] {
                            logits.set_grad(Tensor());
                            cross_entropy(logits, targets).backward();
                          },
                          3 * n * e + 2 * target_bytes, copy_gbs);
    }
    {  // dropout (p = 0.1). fwd: read x, write y and the Bool mask. bwd: read dy and the mask, write dx.
      const Shape shape = {s.rows, s.cols};
      const double n = static_cast<double>(s.rows * s.cols);
      Tensor x = seeded(shape, 10, false, dt), dy = seeded(shape, 14, false, dt);
      Generator gen(15);
      auto [y, mask] = native_dropout(x, 0.1, &gen);
      print_bandwidth_row(s, "native_dropout (p=0.1)", dt, shape,
                          [&] { auto r = native_dropout(x, 0.1, &gen); }, 2 * n * e + n, copy_gbs);
      print_bandwidth_row(s, "native_dropout_backward", dt, shape,
                          [&] { Tensor dx = native_dropout_backward(dy, mask, 1.0 / 0.9); },
                          2 * n * e + n, copy_gbs);
    }
    {  // AdamW's fused update of one parameter: read param, grad, exp_avg, exp_avg_sq; write param
       // and the two moments.
      const Shape shape = {s.rows, s.cols};
      const double n = static_cast<double>(s.rows * s.cols);
      Tensor p = seeded(shape, 16, false, dt), g = seeded(shape, 17, false, dt);
      Tensor m = zeros(shape, TensorOptions().dtype(dt)), v = zeros(shape, TensorOptions().dtype(dt));
      int64_t step = 0;
      print_bandwidth_row(s, "_fused_adamw_ (one parameter)", dt, shape, [&] {
                            _fused_adamw_(p, m, v, g, 1e-3, 0.9, 0.999, 0.01, 1e-8, ++step);
                          },
                          7 * n * e, copy_gbs);
    }
  }
}

// The elementwise ops of one attention block and MLP at the GPT's shapes (config A: scores
// [batch, heads, seq, seq], the MLP's hidden [batch, seq, 4 d]): what SAC recomputes in backward
// when it keeps the matmuls, so their speed is most of SAC's overhead.
void gpt_elementwise_section(const Sizes& s, double copy_gbs) {
  const int64_t t = 128 / s.gpt_scale, d = 256 / s.gpt_scale;
  const Shape scores_shape = {8, 4, t, t}, hidden_shape = {8, t, 4 * d}, bias_shape = {8 * t, 4 * d};
  const std::string title = std::string("attention and MLP elementwise ops at the GPT's shapes (config A") +
                            (s.gpt_scale == 1 ? ")" : ", scaled down)");
  print_bandwidth_header(title.c_str());
  Tensor future = triu(ones({t, t}, TensorOptions().dtype(kBool)), 1);
  const double inf = std::numeric_limits<double>::infinity();
  for (ScalarType dt : kBandwidthDtypes) {
    const double e = static_cast<double>(elementSize(dt));
    Tensor scores = seeded(scores_shape, 11, false, dt), hidden = seeded(hidden_shape, 12, false, dt);
    const double n = static_cast<double>(scores.numel()), h = static_cast<double>(hidden.numel());
    print_bandwidth_row(s, "mul (scores * scale)", dt, scores_shape,
                        [&] { Tensor y = mul(scores, 0.125); }, 2 * n * e, copy_gbs);
    print_bandwidth_row(s, "masked_fill (causal, -inf)", dt, scores_shape,
                        [&] { Tensor y = masked_fill(scores, future, -inf); }, 2 * n * e, copy_gbs);
    Tensor masked = masked_fill(scores, future, -inf);
    print_bandwidth_row(s, "softmax(dim=-1) of masked scores", dt, scores_shape,
                        [&] { Tensor y = softmax(masked, -1); }, 2 * n * e, copy_gbs);
    // the math attention's causal path: the two ops above in one pass (PyTorch's _masked_softmax)
    print_bandwidth_row(s, "_masked_softmax (causal [L, S] mask)", dt, scores_shape,
                        [&] { Tensor y = _masked_softmax(scores, future, -1, 0); }, 2 * n * e,
                        copy_gbs);
    Tensor attn = _masked_softmax(scores, future, -1, 0), dattn = seeded(scores_shape, 14, false, dt);
    print_bandwidth_row(s, "_softmax_backward_data", dt, scores_shape,
                        [&] { Tensor y = _softmax_backward_data(dattn, attn, -1); }, 3 * n * e,
                        copy_gbs);
    print_bandwidth_row(s, "masked_fill (its backward, 0)", dt, scores_shape,
                        [&] { Tensor y = masked_fill(dattn, future, 0.0); }, 2 * n * e, copy_gbs);
    print_bandwidth_row(s, "_masked_softmax_backward (both above)", dt, scores_shape,
                        [&] { Tensor y = _masked_softmax_backward(dattn, attn, future, -1); },
                        3 * n * e, copy_gbs);
    print_bandwidth_row(s, "gelu (tanh)", dt, hidden_shape,
                        [&] { Tensor y = gelu(hidden, "tanh"); }, 2 * h * e, copy_gbs);
    Tensor dy = seeded(hidden_shape, 13, false, dt);
    print_bandwidth_row(s, "gelu_backward (tanh)", dt, hidden_shape,
                        [&] { Tensor y = gelu_backward(dy, hidden, "tanh"); }, 3 * h * e, copy_gbs);
    // the Llama's SwiGLU gate (F.silu(w1(x)) * w3(x)) at the same shape
    print_bandwidth_row(s, "silu", dt, hidden_shape, [&] { Tensor y = silu(hidden); }, 2 * h * e,
                        copy_gbs);
    print_bandwidth_row(s, "silu_backward", dt, hidden_shape,
                        [&] { Tensor y = silu_backward(dy, hidden); }, 3 * h * e, copy_gbs);
    // attention's q, k and v copies for bmm: [batch, seq, heads, head] viewed as [batch, heads, seq,
    // head] (transpose(1, 2)) made contiguous: runs of one head's 64 elements
    Tensor qkv_part = seeded({8, t, 4, d / 4}, 17, false, dt).transpose(1, 2);
    print_bandwidth_row(s, "contiguous (q: heads out of [b, t, h, d])", dt, qkv_part.sizes(),
                        [&] { Tensor y = qkv_part.contiguous(); }, 2.0 * static_cast<double>(qkv_part.numel()) * e,
                        copy_gbs);
    // k for q @ k^T: k's heads out of qkv [batch, seq, 3 d] (split, view, transpose(1, 2)), then
    // transpose(2, 3): [batch, heads, head, seq], whose last dim is strided; contiguous() transposes
    Tensor k_t = seeded({8, t, 3 * d}, 21, false, dt).narrow(2, d, d).view({8, t, 4, d / 4}).transpose(1, 2).transpose(2, 3);
    print_bandwidth_row(s, "contiguous (k: heads out as [b, h, d, t])", dt, k_t.sizes(),
                        [&] { Tensor y = k_t.contiguous(); }, 2.0 * static_cast<double>(k_t.numel()) * e, copy_gbs);
    // split's backward: q's, k's and v's gradients [batch, seq, d] joined into qkv's [batch, seq, 3 d]
    std::vector<Tensor> qkv_grads = {seeded({8, t, d}, 18, false, dt), seeded({8, t, d}, 19, false, dt),
                                     seeded({8, t, d}, 20, false, dt)};
    print_bandwidth_row(s, "cat (q, k, v gradients, last dim)", dt, {8, t, 3 * d},
                        [&] { Tensor y = cat(qkv_grads, 2); }, 6.0 * 8 * t * d * e, copy_gbs);
    Tensor g = dy.reshape(bias_shape);
    print_bandwidth_row(s, "sum (dim 0: fc1's bias gradient)", dt, bias_shape,
                        [&] { Tensor db = sum(g, {0}); }, (h + 4.0 * d) * e, copy_gbs);
  }
  // The Llama's rotary (torchtitan's apply_rotary_emb, in complex64 whatever the model's dtype): q
  // as [batch, seq, heads, head_dim / 2] complex times freqs_cis [1, seq, 1, head_dim / 2], at the
  // debugmodel's 16 heads of 16: runs of 8 complex numbers, freqs_cis broadcast over the heads.
  const Shape rotary_shape = {8, t, 16, 8};
  Tensor q = view_as_complex(seeded({8, t, 16, 8, 2}, 15)), freqs = view_as_complex(seeded({1, t, 1, 8, 2}, 16));
  print_bandwidth_row(s, "mul (rotary: complex q * freqs_cis)", kFloat, rotary_shape, [&] { Tensor y = mul(q, freqs); },
                      2.0 * static_cast<double>(q.numel()) * 8 + static_cast<double>(freqs.numel()) * 8, copy_gbs);
}

// The matrix products of the GPT step (config A) as the step calls them: the forward's linears
// (addmm, a bias row), the backward's input and weight gradients (mm, one operand transposed in
// memory), attention's bmm. Shape [m, n, k] (bmm: [batch, m, n, k]); bench/torch_ops.py builds the
// same operands from the row's name and shape. These are most of a step's time, so they belong
// beside PyTorch's (MKL or oneDNN, whichever it picks) as much as the elementwise ops.
void gpt_product_section(const Sizes& s) {
  const int64_t bt = 1024 / s.gpt_scale, c = 256 / s.gpt_scale, t = 128 / s.gpt_scale, d = 64 / s.gpt_scale, bh = 32;
  const int64_t heads = c / d;
  struct ProductRow {
    const char* op;
    Shape shape;  // [m, n, k], [batch, m, n, k] or [batch, heads, m, n, k]
    bool trans_a, trans_b;
    bool b_head_view = false;  // b: [batch, heads, k, n] viewed out of [batch, k, heads, n], rows heads * n apart
  };
  const ProductRow rows[] = {
      {"addmm (qkv: b + x @ W^T)", {bt, 3 * c, c}, false, true}, {"addmm (fc1: b + x @ W^T)", {bt, 4 * c, c}, false, true},
      {"addmm (fc2: b + h @ W^T)", {bt, c, 4 * c}, false, true}, {"mm (fc1 dx: g @ W)", {bt, c, 4 * c}, false, false},
      {"mm (fc1 dW^T: x^T @ g)", {c, 4 * c, bt}, true, false},   {"mm (fc2 dW^T: h^T @ g)", {4 * c, c, bt}, true, false},
      {"bmm (scores: q @ k^T)", {bh, t, t, d}, false, true},     {"bmm (out: P @ v)", {bh, t, d, t}, false, false},
      {"bmm (dv: P^T @ dy)", {bh, t, d, t}, true, false},
      // The step's dv: dy is the gradient of the heads' output [b, t, h, d] seen as [b, h, t, d]
      // (matmul's 4-D operands, as attention calls it: remat runs them in place, PyTorch's matmul
      // reshapes such a view into a copy first).
      {"matmul (dv: P^T @ dy, head view)", {bh / heads, heads, t, d, t}, true, false, true},
  };
  const std::string title = std::string("matrix products at the GPT's shapes (config A") +
                            (s.gpt_scale == 1 ? "" : ", scaled down") +
                            "), as the step calls them; shape [batch,] m, n, k; % peak: of the FP32 FMA peak above";
  print_bandwidth_header(title.c_str(), "GFLOP/s", "% peak");
  for (ScalarType dt : kBandwidthDtypes) {
    for (const ProductRow& pr : rows) {
      if (!g_only.empty() && std::string(pr.op).find(g_only) == std::string::npos) continue;
      const Shape& shape = pr.shape;
      const Shape batch(shape.begin(), shape.end() - 3);  // [], [batch] or [batch, heads]
      const int64_t m = shape[shape.size() - 3], n = shape[shape.size() - 2], k = shape.back();
      int64_t b = 1;
      for (int64_t size : batch) b *= size;
      auto with_batch = [&](std::initializer_list<int64_t> last) {
        Shape full = batch;
        full.insert(full.end(), last);
        return full;
      };
      // An operand transposed in memory is made as its transpose, then viewed back.
      auto operand = [&](int64_t rows, int64_t cols, bool transposed, uint64_t seed) {
        const int64_t d = static_cast<int64_t>(batch.size());
        if (!transposed) return seeded(with_batch({rows, cols}), seed, false, dt);
        return seeded(with_batch({cols, rows}), seed, false, dt).transpose(d, d + 1);
      };
      Tensor x = operand(m, k, pr.trans_a, 21), bias = seeded({n}, 23, false, dt);
      Tensor w = pr.b_head_view ? seeded({batch[0], k, batch[1], n}, 22, false, dt).transpose(1, 2)
                                : operand(k, n, pr.trans_b, 22);
      const std::string name = pr.op;
      std::function<void()> f;
      if (name.rfind("addmm", 0) == 0) f = [&] { Tensor y = addmm(bias, x, w); };
      else if (batch.size() == 2) f = [&] { Tensor y = matmul(x, w); };
      else if (batch.size() == 1) f = [&] { Tensor y = bmm(x, w); };
      else f = [&] { Tensor y = mm(x, w); };
      bench::OpRow row{name, dtype_name(dt), shape, g_threads};
      const double seconds = time_row(s, row, f);
      if (!g_list_only) {
        row.gflops = 2.0 * static_cast<double>(b * m * n * k) / seconds / 1e9;
        if (dt == kFloat && g_fma_peak > 0) row.pct_peak = 100.0 * row.gflops / g_fma_peak;
      }
      g_rows.push_back(row);
      if (g_list_only) continue;
      char figures[64];
      std::snprintf(figures, sizeof figures, "%10.3f %10.1f %8s", seconds * 1e3, row.gflops,
                    row.pct_peak > 0 ? (std::to_string(static_cast<int>(row.pct_peak + 0.5)) + "%").c_str() : "-");
      print_row(row, figures);
    }
  }
}

// --threads: OpenMP starts every thread asked for (99999999999 would never finish starting).
constexpr int64_t kMaxThreads = 4096;

[[noreturn]] void usage_error(const std::string& what) {
  throw UsageError(what + " (usage: ops [--quick] [--threads N] [--clock wall|cpu] [--only TEXT] [--list-rows] "
                          "[--compare FILE | --beside COMMAND [--rounds N]] [--json FILE])");
}

// Prints the machine's copy bandwidth and FMA peak, then the GEMMs; returns the "% copy" reference.
double machine_and_gemm_sections(const Sizes& s, int threads, bool quick, bool gemms) {
  std::printf("ops benchmark%s: %d thread(s), median of %d samples after a warm-up, %s time\n",
              quick ? " (--quick)" : "", threads, s.reps, g_cpu_clock ? "CPU" : "wall-clock");
  Bandwidth bw = measure_copy(s, threads);
  double peak = bench::measure_fma_peak_gflops(threads, s.fma_iters, s.fma_samples);  // FP32 FMA, GFLOP/s
  g_fma_peak = peak;
  std::printf("\nmachine (measured in this run)\n");
  std::printf("%-58s %10s\n", "", "GB/s");
  const std::string parallel_copy_row =
      "copy, " + std::to_string(threads) + " thread(s), " + std::to_string(s.copy_floats) + " floats, read+write";
  std::printf("%-58s %10.1f\n", parallel_copy_row.c_str(), bw.parallel_gbs);
  std::printf("%-58s %10.1f\n", "copy, one memcpy", bw.single_gbs);
  std::printf("%-58s %10.1f\n", "copy into a fresh allocation (first-touch page faults)", bw.fresh_gbs);
  std::printf("%-58s %10.1f\n", "reference for \"% copy\": the faster reused-buffer copy", bw.reference());
#ifdef REMAT_BENCH_NO_FMA
  std::printf("FP32 FMA peak: not measured (built without AVX2/AVX-512 FMA)\n");
#else
  std::printf("FP32 FMA peak (%s, %d thread(s) at once): %.1f GFLOP/s\n", bench::fma_isa(), threads, peak);
#endif
  g_rates = bench::measure_function_rates(threads, s.min_sample_s, s.reps, g_cpu_clock ? Clock::kProcessCpu : Clock::kWall);
  std::printf("%s", bench::rates_text(g_rates, threads).c_str());
  if (gemms) {  // not with --only: that times rows only
    mm_section(s, peak);
    gpt_gemm_section(s, peak, threads);
  }
  return bw.reference();
}

// The benchmark; main() below reports what it throws.
int run(int argc, char** argv) {
  bool quick = false;
  int threads = omp_get_max_threads();
  std::string compare_path, json_path, beside_command;
  int rounds = -1;  // --rounds; 3 with --beside when not given
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf("usage: ops [--quick] [--threads N (1 to %lld)] [--clock wall|cpu] [--only TEXT] [--list-rows] "
                  "[--compare FILE | --beside COMMAND [--rounds N]] [--json FILE]\n",
                  static_cast<long long>(kMaxThreads));
      return 0;
    } else if (arg == "--quick") {
      quick = true;
    } else if (arg == "--list-rows") {
      g_list_only = true;
    } else if (arg == "--clock" || arg == "--threads" || arg == "--compare" || arg == "--json" || arg == "--beside" ||
               arg == "--rounds" || arg == "--only") {
      if (i + 1 >= argc) usage_error("missing value for " + arg);
      const std::string v = argv[++i];
      if (arg == "--threads") {
        threads = static_cast<int>(parse_int("--threads", v, 1, kMaxThreads));
      } else if (arg == "--rounds") {
        rounds = static_cast<int>(parse_int("--rounds", v, 1, 99));
      } else if (arg == "--beside") {
        if (v.find_first_not_of(" \t") == std::string::npos) usage_error("--beside needs a command, got '" + v + "'");
        beside_command = v;
      } else if (arg == "--only") {
        if (v.empty()) usage_error("--only needs some text of a row's op name");
        g_only = v;
      } else if (arg == "--compare") {
        compare_path = v;
      } else if (arg == "--json") {
        json_path = v;
      } else {
        if (v != "wall" && v != "cpu") usage_error("--clock must be wall or cpu, got '" + v + "'");
        g_cpu_clock = v == "cpu";
      }
    } else {
      usage_error("unknown flag '" + arg + "'");
    }
  }
  const Sizes& s = quick ? kQuick : kFull;
  g_threads = threads;
  if (g_list_only && (!compare_path.empty() || !json_path.empty() || !beside_command.empty()))
    usage_error("--list-rows times nothing: it takes neither --compare, --beside nor --json");
  if (!compare_path.empty() && !beside_command.empty())
    usage_error("--compare reads PyTorch's figures from a file, --beside asks a running PyTorch: give one");
  if (rounds > 0 && beside_command.empty()) usage_error("--rounds counts the rounds of --beside: give --beside too");
  g_rounds = beside_command.empty() ? 1 : rounds > 0 ? rounds : 3;
  bench::TorchFigures torch;
  if (!compare_path.empty()) {
    torch = bench::parse_torch_figures(compare_path, read_input_file(compare_path, "--compare", 64 << 20));
    bench::check_torch_timing(torch, threads, g_cpu_clock ? "cpu" : "wall");
    g_torch = &torch;
  }
  if (!json_path.empty()) bench::check_output_file("--json", json_path);
  const std::string clock = g_cpu_clock ? "cpu" : "wall";
  std::unique_ptr<bench::PeerProcess> beside;
  bench::TorchFigures beside_session;
  if (!beside_command.empty()) {
    beside = std::make_unique<bench::PeerProcess>("ops --beside", beside_command);
    beside_session = bench::parse_torch_session(
        beside_command, beside->ask(bench::torch_session_request(threads, s.reps, s.min_sample_s, clock)), threads,
        clock);
    g_beside = beside.get();
  }
  omp_set_num_threads(threads);  // remat's parallel_for and OpenBLAS (OpenMP build) read this
  openblas_set_num_threads(threads);
  Eigen::setNbThreads(threads);

  if (!g_only.empty()) {  // refuse a text no row holds before the minute the machine's limits take
    const bool list_only = g_list_only;
    g_list_only = true;
    pointwise_section(s, 1.0);
    transformer_section(s, 1.0);
    gpt_elementwise_section(s, 1.0);
    gpt_product_section(s);
    g_list_only = list_only;
    const bool none = g_rows.empty();
    g_rows.clear();
    if (none) usage_error("--only '" + g_only + "': no row's op name holds it");
  }
  // The machine's limits and the GEMMs (not with --list-rows: only the bandwidth rows are listed).
  const double copy_gbs = g_list_only ? 1.0 : machine_and_gemm_sections(s, threads, quick, /*gemms=*/g_only.empty());
  pointwise_section(s, copy_gbs);
  transformer_section(s, copy_gbs);
  gpt_elementwise_section(s, copy_gbs);
  gpt_product_section(s);
  const std::string rows = bench::rows_json(g_rows, threads, s.reps, s.min_sample_s, clock);
  if (g_list_only) return std::printf("%s", rows.c_str()) < 0 ? 1 : 0;

  // On a shared machine the load can change during the run: a reference far from the first one
  // means the "% copy" columns are only rough.
  std::printf("\ncopy bandwidth re-measured at the end: %.1f GB/s (reference: %.1f GB/s)\n",
              measure_copy(s, threads).reference(), copy_gbs);
  if (std::any_of(g_rows.begin(), g_rows.end(), [](const bench::OpRow& r) { return !r.bound_function.empty(); }))
    std::printf("\nops bound by arithmetic: each against its function alone (above), %% bound = bound ms / ms\n%s",
                bench::bounds_table(g_rows).c_str());
  if (g_torch != nullptr)
    std::printf("PyTorch %s (%s): ratio = remat ms / torch ms; torch out ms: into an existing output (out=, copy_), "
                "n/a where the op has no such form (in place, or no out= variant; null in --json)\n",
                torch.version.c_str(), compare_path.c_str());
  if (g_beside != nullptr)
    std::printf("PyTorch %s (--beside %s): each row timed %d time(s) in turn, remat's median then PyTorch's, the "
                "figures the medians of the rounds; ratio = remat ms / torch ms; rounds' range: the lowest and highest "
                "ratio of a round; torch out ms: into an existing output (out=, copy_), n/a where the op has no such "
                "form\n",
                beside_session.version.c_str(), beside_command.c_str(), g_rounds);
  if (!json_path.empty()) write_file_atomically(json_path, rows);
  return 0;
}

}  // namespace

// Anything thrown: one "error: ..." line; exit 2 for bad usage, 1 for a failed run (engine/core/cli.h).
int main(int argc, char** argv) {
  return run_main([&] { return run(argc, argv); });
}
