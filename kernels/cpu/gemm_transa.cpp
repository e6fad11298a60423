// Mirrors ATen/native/BlasKernel.cpp's gemm_transa_.
#include "kernels/cpu/gemm_transa.h"

#include <algorithm>

#include "engine/core/error.h"
#include "kernels/cpu/cpu_model.h"
#include "kernels/cpu/parallel.h"
#include "kernels/cpu/x86_intrinsics.h"

namespace remat::kernels::cpu {

#if defined(__AVX512F__)

namespace {

constexpr int kRows = 6;      // rows of c a tile holds (6 x 4 accumulators: 24 of the 32 registers)
constexpr int kVectors = 4;   // 16-float vectors across a tile: 64 columns
constexpr int64_t kCols = 16 * kVectors;
constexpr int64_t kLine = 64;  // bytes in a cache line

// Asks for one operand's lines (rows of row_floats floats, row_stride floats apart) one at a time:
// the next batch entry's a and b, spread over the current entry's reduction steps.
class LinePrefetcher {
 public:
  LinePrefetcher() = default;
  LinePrefetcher(const float* base, int64_t rows, int64_t row_floats, int64_t row_stride)
      : row_(reinterpret_cast<const char*>(base)),
        rows_left_(rows),
        lines_per_row_((row_floats * int64_t(sizeof(float)) + kLine - 1) / kLine),
        row_bytes_(row_stride * int64_t(sizeof(float))) {}
  bool done() const { return rows_left_ <= 0; }
  void one() {
    _mm_prefetch(row_ + line_ * kLine, _MM_HINT_T0);
    if (++line_ == lines_per_row_) {
      line_ = 0;
      row_ += row_bytes_;
      --rows_left_;
    }
  }

 private:
  const char* row_ = nullptr;
  int64_t rows_left_ = 0, lines_per_row_ = 1, row_bytes_ = 0, line_ = 0;
};

// The next entry's a, then its b.
struct NextEntry {
  LinePrefetcher a, b;
  void one() {
    if (!a.done()) a.one();
    else if (!b.done()) b.one();
  }
};

struct Epilogue {
  float alpha, beta;
  const float* bias;  // at the tile's first column, or null
};

// c[R rows, V vectors (the last one masked by last)] = epilogue(sum over k of a[k, r] b[k, :]).
template <int R, int V>
void tile(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, __mmask16 last,
          const Epilogue& e, NextEntry& next) {
  __m512 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t s = 0; s < k; ++s) {
    const float* bs = b + s * ldb;
    __m512 bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = v == V - 1 ? _mm512_maskz_loadu_ps(last, bs + 16 * v) : _mm512_loadu_ps(bs + 16 * v);
    next.one();
    const float* as = a + s * lda;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(as[r]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(x, bv[v], acc[r][v]);
    }
  }
  const __m512 alpha = _mm512_set1_ps(e.alpha), beta = _mm512_set1_ps(e.beta);
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    const __mmask16 m = v == V - 1 ? last : __mmask16(0xFFFF);
    const __m512 bias = e.bias ? _mm512_maskz_loadu_ps(m, e.bias + 16 * v) : _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      float* out = c + r * ldc + 16 * v;
      __m512 y = e.alpha == 1.0f ? acc[r][v] : _mm512_mul_ps(alpha, acc[r][v]);
      if (e.beta != 0.0f) y = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(m, out), y);
      if (e.bias) y = _mm512_add_ps(y, bias);
      _mm512_mask_storeu_ps(out, m, y);
    }
  }
}

template <int R>
void tile_of_width(int vectors, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                   int64_t ldc, __mmask16 last, const Epilogue& e, NextEntry& next) {
  switch (vectors) {
    case 4: return tile<R, 4>(k, a, lda, b, ldb, c, ldc, last, e, next);
    case 3: return tile<R, 3>(k, a, lda, b, ldb, c, ldc, last, e, next);
    case 2: return tile<R, 2>(k, a, lda, b, ldb, c, ldc, last, e, next);
    default: return tile<R, 1>(k, a, lda, b, ldb, c, ldc, last, e, next);
  }
}

// One batch entry: a column block of b (64 wide) at a time, every row of c against it.
void entry(const StridedGemm& p, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
           float alpha, float beta, const float* bias, NextEntry& next) {
  for (int64_t j = 0; j < p.n; j += kCols) {
    const int64_t width = std::min(kCols, p.n - j);
    const int vectors = static_cast<int>((width + 15) / 16);
    const int64_t tail = width - 16 * (vectors - 1);
    const __mmask16 last = tail == 16 ? __mmask16(0xFFFF) : __mmask16((1u << tail) - 1);
    const Epilogue e{alpha, beta, bias ? bias + j : nullptr};
    // Rows of b far apart (heads side by side: a row stride of C floats) fall into a few of L1's
    // sets and evict each other before the next tile reads them again: such a block is copied
    // together first.
    const float* block = b + j;
    int64_t ld_block = ldb;
    if (ldb != width) {
      alignas(64) thread_local float packed[kTransaMaxK * kCols];
      for (int64_t s = 0; s < p.k; ++s)
        for (int v = 0; v < vectors; ++v)
          _mm512_store_ps(packed + s * kCols + 16 * v,
                          _mm512_maskz_loadu_ps(v == vectors - 1 ? last : __mmask16(0xFFFF), b + s * ldb + j + 16 * v));
      block = packed;
      ld_block = kCols;
    }
    int64_t i = 0;
    for (; i + kRows <= p.m; i += kRows)
      tile_of_width<kRows>(vectors, p.k, a + i, lda, block, ld_block, c + i * ldc + j, ldc, last, e, next);
    for (; i < p.m; ++i) tile_of_width<1>(vectors, p.k, a + i, lda, block, ld_block, c + i * ldc + j, ldc, last, e, next);
  }
}

}  // namespace

bool gemm_transa_fits(const StridedGemm& p) {
  const size_t bd = static_cast<size_t>(p.batch_dims);
  return p.batch_count() >= 2 && p.k >= 1 && p.k <= kTransaMaxK && p.m >= 1 && p.a[bd] == 1 && p.a[bd + 1] >= p.m &&
         p.b[bd + 1] == 1 && p.b[bd] >= p.n && p.c[bd + 1] == 1 && p.c[bd] >= p.n;
}

bool gemm_transa_applies(const StridedGemm& p) {
  // Where it was measured against oneDNN 2.6's brgemm: Intel (Xeon model 207) and AMD family 0x19
  // (Zen 4; Zen 3 has no AVX-512, so an AVX-512 build never runs there). Zen 5 was not: it keeps oneDNN.
  static const bool machine = intel_cpu() || amd_family() == 0x19;
  return machine && gemm_transa_fits(p);
}

void gemm_transa_batched(const StridedGemm& p, float alpha, const float* a, const float* b, float beta, float* c,
                         const float* bias) {
  REMAT_CHECK(gemm_transa_fits(p), "gemm_transa_batched: the problem (m ", p.m, ", n ", p.n, ", k ", p.k,
              ") is not a batched product with a transposed a and k <= ", kTransaMaxK);
  const size_t bd = static_cast<size_t>(p.batch_dims);
  const int64_t lda = p.a[bd + 1], ldb = p.b[bd], ldc = p.c[bd];
  parallel_for(0, p.batch_count(), 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) {
      NextEntry next;
      if (i + 1 < hi) {
        next.a = LinePrefetcher(a + p.offset(p.a, i + 1), p.k, p.m, lda);
        next.b = LinePrefetcher(b + p.offset(p.b, i + 1), p.k, p.n, ldb);
      }
      entry(p, a + p.offset(p.a, i), lda, b + p.offset(p.b, i), ldb, c + p.offset(p.c, i), ldc, alpha, beta, bias, next);
    }
  });
}

#else  // no AVX-512: never applies

bool gemm_transa_fits(const StridedGemm&) { return false; }
bool gemm_transa_applies(const StridedGemm&) { return false; }

void gemm_transa_batched(const StridedGemm& p, float, const float*, const float*, float, float*, const float*) {
  REMAT_CHECK(false, "gemm_transa_batched: the problem (m ", p.m, ", n ", p.n, ", k ", p.k,
              ") needs an AVX-512 build");
}

#endif

}  // namespace remat::kernels::cpu
