// Mirrors ATen/native/CPUBlas.cpp.
#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#ifdef REMAT_USE_OPENBLAS
#include <cblas.h>
#endif

#include "engine/core/error.h"
#include "kernels/cpu/bfloat16_convert.h"
#include "kernels/cpu/cpu_model.h"
#include "kernels/cpu/eigen.h"
#include "kernels/cpu/gemm_transa.h"
#include "kernels/cpu/onednn_matmul.h"
#include "kernels/cpu/parallel.h"

namespace remat::kernels::cpu {

namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ConstRowMap = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;
template <class T>
using RowMap = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;

template <class T>
void eigen_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
                int64_t ldb, T beta, T* c, int64_t ldc) {
  RowMap<T> C(c, m, n, Eigen::OuterStride<>(ldc));
  ConstRowMap<T> A(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  ConstRowMap<T> B(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  if (beta == T(0)) C.setZero();
  else if (beta != T(1)) C *= beta;
  if (!ta && !tb) C.noalias() += alpha * A * B;
  else if (ta && !tb) C.noalias() += alpha * A.transpose() * B;
  else if (!ta && tb) C.noalias() += alpha * A * B.transpose();
  else C.noalias() += alpha * A.transpose() * B.transpose();
}

// The 2-D problem as a StridedGemm (no batch dims).
StridedGemm plain_problem(bool ta, bool tb, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb, int64_t ldc) {
  StridedGemm p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = {ta ? 1 : lda, ta ? lda : 1};
  p.b = {tb ? 1 : ldb, tb ? ldb : 1};
  p.c = {ldc, 1};
  return p;
}

// One operand's BLAS form: transposed or not, and its leading dimension.
struct BlasOperand {
  bool trans;
  int64_t ld;
};
BlasOperand blas_operand(const char* which, int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if (col_stride == 1 || cols == 1) return {false, std::max<int64_t>({row_stride, cols, 1})};
  if (row_stride == 1 || rows == 1) return {true, std::max<int64_t>({col_stride, rows, 1})};
  throw Error(detail::str("gemm_batched: operand ", which, " has no unit stride (row stride ", row_stride,
                          ", column stride ", col_stride, ")"));
}

// Float buffers of the widened products, kept per thread and reused: a fresh allocation per call
// costs its page faults (about as much as the conversion itself at the GPT's shapes).
float* scratch(int slot, int64_t n) {
  struct Buffer {
    std::unique_ptr<float[]> data;
    int64_t size = 0;
  };
  thread_local std::array<Buffer, 4> buffers;
  Buffer& b = buffers[static_cast<size_t>(slot)];
  if (b.size < n) {
    b.data.reset(new float[static_cast<size_t>(n)]);  // uninitialised: every element is written before it is read
    b.size = n;
  }
  return b.data.get();
}

// Copies every batch entry of one operand into a dense float buffer [batch, rows, cols] (or
// [batch, cols, rows] when its columns are contiguous in memory), returning its new strides.
template <class H>
std::array<int64_t, StridedGemm::kMaxBatchDims + 2> widen_operand(const StridedGemm& p, const H* src,
                                                                  const std::array<int64_t, StridedGemm::kMaxBatchDims + 2>& st,
                                                                  int64_t rows, int64_t cols, float* dst) {
  const int64_t batch = p.batch_count();
  const int64_t rs = st[static_cast<size_t>(p.batch_dims)], cs = st[static_cast<size_t>(p.batch_dims + 1)];
  const bool col_major = !(cs == 1 || cols == 1);  // blas_operand's choice
  const int64_t lines = col_major ? cols : rows, len = col_major ? rows : cols;
  const int64_t line_stride = col_major ? cs : rs;
  parallel_for(0, batch * lines, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(len, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t l = lo; l < hi; ++l) {
      const int64_t i = l / lines, j = l % lines;
      const H* line = src + p.offset(st, i) + j * line_stride;
      float* out = dst + l * len;
      if constexpr (std::is_same_v<H, BFloat16>) {
        bf16_to_float(line, out, len);
      } else {
        for (int64_t e = 0; e < len; ++e) out[e] = float(line[e]);
      }
    }
  });
  std::array<int64_t, StridedGemm::kMaxBatchDims + 2> dense{};
  int64_t size = rows * cols;
  for (int d = p.batch_dims - 1; d >= 0; --d) {
    dense[static_cast<size_t>(d)] = size;
    size *= p.batch[static_cast<size_t>(d)];
  }
  dense[static_cast<size_t>(p.batch_dims)] = col_major ? 1 : cols;
  dense[static_cast<size_t>(p.batch_dims + 1)] = col_major ? rows : 1;
  return dense;
}

// 16-bit operands without a 16-bit GEMM: widen to float (f32 accumulation), multiply as one
// batched float problem, round the result once.
template <class H>
void widened_gemm_batched(const StridedGemm& p, H alpha, const H* a, const H* b, H beta, H* c, const H* bias) {
  const int64_t batch = p.batch_count(), mn = p.m * p.n;
  float* af = scratch(0, batch * p.m * p.k);
  float* bf = scratch(1, batch * p.k * p.n);
  float* cf = scratch(2, batch * mn);
  StridedGemm q = p;
  q.a = widen_operand(p, a, p.a, p.m, p.k, af);
  q.b = widen_operand(p, b, p.b, p.k, p.n, bf);
  const float fbeta = float(beta);
  // c is read only when beta != 0: its float copy is dense either way.
  if (fbeta != 0.0f) {
    q.c = widen_operand(p, c, p.c, p.m, p.n, cf);
  } else {
    int64_t size = mn;
    for (int d = p.batch_dims - 1; d >= 0; --d) {
      q.c[static_cast<size_t>(d)] = size;
      size *= p.batch[static_cast<size_t>(d)];
    }
    q.c[static_cast<size_t>(p.batch_dims)] = p.n;
    q.c[static_cast<size_t>(p.batch_dims + 1)] = 1;
  }
  float* biasf = bias ? scratch(3, p.n) : nullptr;
  for (int64_t j = 0; bias && j < p.n; ++j) biasf[j] = float(bias[j]);
  gemm_batched<float>(q, float(alpha), af, bf, fbeta, cf, biasf);
  const int64_t crs = p.c[static_cast<size_t>(p.batch_dims)];
  parallel_for(0, batch * p.m, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(p.n, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t i = r / p.m, row = r % p.m;
      H* out = c + p.offset(p.c, i) + row * crs;
      const float* in = cf + r * p.n;
      if constexpr (std::is_same_v<H, BFloat16>) {
        float_to_bf16(in, out, p.n);
      } else {
        for (int64_t j = 0; j < p.n; ++j) out[j] = H(in[j]);
      }
    }
  });
}

// Batch entries a parallel task takes so that it does at least ~256K multiply-adds: waking a
// thread costs more than a tiny product.
int64_t batch_grain(int64_t madds_per_entry) {
  return std::max<int64_t>(1, (int64_t{1} << 18) / std::max<int64_t>(madds_per_entry, 1));
}

// The loop over batch entries, one BLAS/Eigen product each.
template <class T>
void blas_gemm_batched(const StridedGemm& p, T alpha, const T* a, const T* b, T beta, T* c, const T* bias) {
  const size_t bd = static_cast<size_t>(p.batch_dims);
  BlasOperand oa = blas_operand("a", p.m, p.k, p.a[bd], p.a[bd + 1]);
  BlasOperand ob = blas_operand("b", p.k, p.n, p.b[bd], p.b[bd + 1]);
  const int64_t ldc = p.c[bd], batch = p.batch_count();
  if (bias) {
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t r = 0; r < p.m; ++r) std::copy(bias, bias + p.n, c + p.offset(p.c, i) + r * ldc);
    beta = T(1);
  }
  auto one = [&](int64_t i) {
    gemm<T>(oa.trans, ob.trans, p.m, p.n, p.k, alpha, a + p.offset(p.a, i), oa.ld, b + p.offset(p.b, i), ob.ld, beta,
            c + p.offset(p.c, i), ldc);
  };
  // Small products: one per thread, in chunks of batch_grain's; large ones: let the GEMM use every
  // thread.
  const int64_t mnk = p.m * p.n * std::max<int64_t>(p.k, 1);
  if (batch > 1 && mnk < (1 << 21)) {
    parallel_for(0, batch, batch_grain(mnk), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) one(i);
  }
}

// k == 0: c = beta * c (+ bias); nothing to multiply.
template <class T>
void empty_product(const StridedGemm& p, T beta, T* c, const T* bias) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const size_t bd = static_cast<size_t>(p.batch_dims);
  for (int64_t i = 0, batch = p.batch_count(); i < batch; ++i)
    for (int64_t r = 0; r < p.m; ++r) {
      T* row = c + p.offset(p.c, i) + r * p.c[bd];
      for (int64_t j = 0; j < p.n; ++j) {
        T v = A(beta) == A(0) ? T(0) : T(A(beta) * A(row[j]));
        row[j] = bias ? T(A(v) + A(bias[j])) : v;
      }
    }
}

// Whether oneDNN should run this float product. Everywhere but one case: a transposed a with a
// long reduction (a weight gradient x^T g, k = batch * seq) on a CPU without AVX-512, where
// oneDNN 2.6's AVX2 sgemm runs at about half OpenBLAS's speed (bench/ops, GPT shapes: 34 vs 77
// GFLOP/s at 256x1024x1024); at k = 128 (attention's P^T dy) it is the faster one. A function of
// the problem and the machine only, so every run makes the same choice (and gives the same bits).
bool onednn_for_float(const StridedGemm& p) {
#ifdef REMAT_USE_OPENBLAS
  const size_t bd = static_cast<size_t>(p.batch_dims);
  const bool a_transposed = p.a[bd + 1] != 1 && p.k > 1;
  return !(a_transposed && p.k >= 512) || onednn::has_avx512();
#else
  (void)p;
  return true;
#endif
}

// Whether oneDNN's bf16 matmul should run a bf16 product. Not on an Intel CPU without AMX: there
// (the Intel Xeon, AMX hidden by its virtual machine) oneDNN 2.6 picks brg:avx512_core_bf16, whose
// products at the GPT's shapes ran at 83-85 GFLOP/s on 1 thread, while the same products widened
// to float ran at 132-139 (its f32 GEMM at 150, plus the conversions). With AMX oneDNN's bf16 is the
// faster by far; AMD Zen 5's bf16 dot products ran 410-518 GFLOP/s through it, 1.6-1.9x its f32
// peak; Zen 4 keeps oneDNN's, as it was measured with.
bool onednn_for_bf16() {
  static const bool yes = !intel_cpu() || onednn::has_amx();
  return yes;
}

// A product this small (m n k <= 2^20: at most 2 MFLOP, tens of microseconds on one core) spends
// about as long in oneDNN's per-call work (the primitive's lookup, memory objects, argument map) as
// in the product, so OpenBLAS (or Eigen) runs it. Flash attention's blocks are such products: at the
// Llama debugmodel's head_dim 16 its backward took 53 ms a step through oneDNN and 30 through
// OpenBLAS (PyTorch 2.15: 40; AMD Zen 4, 1 thread); at a 256 x 512 x 64 block oneDNN is the faster.
constexpr int64_t kSmallGemm = int64_t(1) << 20;

}  // namespace

bool bf16_products_widen() { return !onednn::built() || !onednn::has_avx512() || !onednn_for_bf16(); }

const char* gemm_backend() {
#if defined(REMAT_USE_ONEDNN)
  return "oneDNN";
#elif defined(REMAT_USE_OPENBLAS)
  return "OpenBLAS";
#else
  return "Eigen";
#endif
}

namespace {

// p's products by the backend that runs them, whole (oneDNN splits the work between the threads).
template <class T>
void gemm_batched_whole(const StridedGemm& p, T alpha, const T* a, const T* b, T beta, T* c, const T* bias) {
  if constexpr (std::is_same_v<T, float>) {
    if (gemm_transa_applies(p)) {  // attention's P^T dy and dS^T q: see gemm_transa.h
      gemm_transa_batched(p, alpha, a, b, beta, c, bias);
      return;
    }
    if (onednn_for_float(p) && onednn::matmul(onednn::DataType::Float, p, alpha, a, b, beta, c, bias)) return;
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    if (onednn_for_bf16() && onednn::matmul(onednn::DataType::BFloat16, p, float(alpha), a, b, float(beta), c, bias))
      return;
  }
  if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>) {
    widened_gemm_batched(p, alpha, a, b, beta, c, bias);
  } else {
    blas_gemm_batched(p, alpha, a, b, beta, c, bias);
  }
}

// Products of at most this many multiply-adds (attention's per-head products at config A: 2^20) run
// split by batch entry (split_batch); larger ones keep oneDNN's split, which can cut one product.
constexpr int64_t kSplitBatchGemm = int64_t(1) << 22;

// Whether p's batch is split between the threads, each thread's contiguous share of the outermost
// batch dim one oneDNN call on that thread (as ATen's bmm loops over small products). oneDNN's own
// split of attention's q @ k^T (32 products of 128 x 128 x 64, f32, 2 threads, AMD Zen 4) ran at
// 0.33 ms in some processes and 0.42 in others, for the whole process; split by batch entry it ran
// at 0.31-0.32 in every one. Only where oneDNN runs the product: the other backends loop over the
// batch themselves.
template <class T>
bool split_batch(const StridedGemm& p) {
  if (p.batch_dims == 0 || num_threads() == 1 || in_parallel_region() || !onednn::built()) return false;
  if (p.batch[0] < num_threads() || p.m * p.n * p.k > kSplitBatchGemm) return false;
  if constexpr (std::is_same_v<T, float>) {
    return !gemm_transa_applies(p) && onednn_for_float(p);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return !bf16_products_widen();
  } else {
    return false;
  }
}

}  // namespace

template <class T>
void gemm_batched(const StridedGemm& p, T alpha, const T* a, const T* b, T beta, T* c, const T* bias) {
  REMAT_CHECK(p.batch_dims >= 0 && p.batch_dims <= StridedGemm::kMaxBatchDims, "gemm_batched: ", p.batch_dims,
              " batch dims (at most ", StridedGemm::kMaxBatchDims, ")");
  REMAT_CHECK(bias == nullptr || (float(alpha) == 1.0f && float(beta) == 0.0f),
              "gemm_batched: a bias needs alpha = 1 and beta = 0, got ", float(alpha), " and ", float(beta));
  if (p.m == 0 || p.n == 0 || p.batch_count() == 0) return;
  if (p.k == 0) {
    empty_product(p, beta, c, bias);
    return;
  }
  if (!split_batch<T>(p)) {
    gemm_batched_whole(p, alpha, a, b, beta, c, bias);
    return;
  }
  // Each thread's share: entries [lo, hi) of the outermost batch dim (each of them the products of
  // the inner batch dims), the same strides.
  const int64_t per_entry = p.batch_count() / p.batch[0] * p.m * p.n * p.k;
  parallel_for(0, p.batch[0], batch_grain(per_entry), [&](int64_t lo, int64_t hi) {
    StridedGemm share = p;
    share.batch[0] = hi - lo;
    gemm_batched_whole(share, alpha, a + lo * p.a[0], b + lo * p.b[0], beta, c + lo * p.c[0], bias);
  });
}

template void gemm_batched<float>(const StridedGemm&, float, const float*, const float*, float, float*, const float*);
template void gemm_batched<double>(const StridedGemm&, double, const double*, const double*, double, double*,
                                   const double*);
template void gemm_batched<BFloat16>(const StridedGemm&, BFloat16, const BFloat16*, const BFloat16*, BFloat16,
                                     BFloat16*, const BFloat16*);
template void gemm_batched<Half>(const StridedGemm&, Half, const Half*, const Half*, Half, Half*, const Half*);

template <>
void gemm<float>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  const StridedGemm p = plain_problem(ta, tb, m, n, k, lda, ldb, ldc);
  if (m * n * k > kSmallGemm && onednn_for_float(p) && onednn::matmul(onednn::DataType::Float, p, alpha, a, b, beta, c, nullptr)) return;
#ifdef REMAT_USE_OPENBLAS
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
#else
  eigen_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

template <>
void gemm<double>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t lda,
                  const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
#ifdef REMAT_USE_OPENBLAS
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta,
              c, static_cast<int>(ldc));
#else
  eigen_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

template <>
void gemm<BFloat16>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, BFloat16 alpha, const BFloat16* a,
                    int64_t lda, const BFloat16* b, int64_t ldb, BFloat16 beta, BFloat16* c, int64_t ldc) {
  gemm_batched(plain_problem(ta, tb, m, n, k, lda, ldb, ldc), alpha, a, b, beta, c);
}

template <>
void gemm<Half>(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Half alpha, const Half* a, int64_t lda,
                const Half* b, int64_t ldb, Half beta, Half* c, int64_t ldc) {
  gemm_batched(plain_problem(ta, tb, m, n, k, lda, ldb, ldc), alpha, a, b, beta, c);
}

}  // namespace remat::kernels::cpu
