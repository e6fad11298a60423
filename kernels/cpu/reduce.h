// Mirrors ATen/native/cpu/ReduceOpsKernel.cpp and SumKernel.cpp: reductions over a set of dims.
//
// The input is seen as [outer..., reduced...] via strides: for each output element (over the
// kept dims) combine the elements of the reduced dims. Two layouts get fast paths: the reduced
// elements are contiguous (a row: vectorised Eigen reduction), or the kept elements are
// contiguous and the reduced dims are outer (column sums: accumulate whole rows).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kernels/cpu/bfloat16_convert.h"
#include "kernels/cpu/cpu_model.h"
#include "kernels/cpu/eigen.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/pointwise.h"
#include "kernels/cpu/vectorized_rows.h"
#include "kernels/cpu/x86_intrinsics.h"

namespace remat::kernels::cpu {

struct ReduceShape {
  // Kept dims (the output's iteration space) and reduced dims, each with input strides;
  // out_strides are the output's strides over the kept dims.
  std::vector<int64_t> kept_sizes, kept_in_strides, kept_out_strides;
  std::vector<int64_t> red_sizes, red_strides;
  int64_t kept_numel() const {
    int64_t n = 1;
    for (int64_t s : kept_sizes) n *= s;
    return n;
  }
  int64_t red_numel() const {
    int64_t n = 1;
    for (int64_t s : red_sizes) n *= s;
    return n;
  }
};

// Sum and max with acc type A.
struct SumReducer {
  template <class A> static A identity() { return A(0); }
  template <class A> static A combine(A a, A b) { return a + b; }
  template <class M> static auto eigen(const M& m) { return m.sum(); }
};
struct MaxReducer {
  // -inf, or the lowest value for integer types (which have no infinity)
  template <class A> static A identity() {
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::lowest();
  }
  template <class A> static A combine(A a, A b) { return (a > b || a != a) ? a : b; }  // NaN wins
  template <class M> static auto eigen(const M& m) { return m.template maxCoeff<Eigen::PropagateNaN>(); }
};

// A whole-tensor reduction (one output over one contiguous run) is cut into chunks of this many
// elements whatever the thread count; each chunk is reduced on one thread and the chunks' results
// are combined in order, so the bits do not depend on the thread count.
constexpr int64_t kSumChunk = 4 * kGrainSize;

#if defined(__AVX512F__)
// The sums of M runs of n contiguous bfloat16 widened exactly (or floats; float sums go through
// sum_runs_f32 below), read together (M streams): per run, four 16-lane accumulators over 64
// elements a step, 16 a step after, the tail (zero-padded) into the second, then the lanes
// combined in a fixed order. One pass over the input, no buffer; each run's bits do not depend on M.
template <int M, class T>
void sum_runs_avx512(const T* const* p, int64_t n, float* out) {
  __m512 a[M][4];
  for (int m = 0; m < M; ++m)
    for (int j = 0; j < 4; ++j) a[m][j] = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
#pragma GCC unroll 4
    for (int m = 0; m < M; ++m) {
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) a[m][j] = _mm512_add_ps(a[m][j], load16_as_float(p[m] + i + 16 * j));
    }
  }
  for (; i + 16 <= n; i += 16)
    for (int m = 0; m < M; ++m) a[m][0] = _mm512_add_ps(a[m][0], load16_as_float(p[m] + i));
  for (int m = 0; m < M; ++m) {
    if (i < n) {
      T tail[16] = {};
      for (int64_t j = i; j < n; ++j) tail[j - i] = p[m][j];
      a[m][1] = _mm512_add_ps(a[m][1], load16_as_float(tail));
    }
    out[m] = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a[m][0], a[m][1]), _mm512_add_ps(a[m][2], a[m][3])));
  }
}

// Float sums read 256 bits at a time. On AMD Zen 4 (1 thread, [4096, 4096] f32, each variant
// timed in one process) 512-bit loads took 1.1-1.3x as long, whole sums and row sums alike;
// PyTorch's sum kernels run their AVX2 build on AVX-512 machines too (REGISTER_DISPATCH leaves
// the AVX512 slot empty: ATen/native/DispatchStub.h). The sums of M runs of n floats, read
// together (M streams): per run, two 8-lane accumulators over 16 elements a step, the tail
// (zero-padded) likewise, then their lanes combined in a fixed order. Each run's bits do not
// depend on M.
template <int M>
void sum_runs_f32(const float* const* p, int64_t n, float* out) {
  __m256 a[M][2];
  for (int m = 0; m < M; ++m) a[m][0] = a[m][1] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
#pragma GCC unroll 8
    for (int m = 0; m < M; ++m) {
      a[m][0] = _mm256_add_ps(a[m][0], _mm256_loadu_ps(p[m] + i));
      a[m][1] = _mm256_add_ps(a[m][1], _mm256_loadu_ps(p[m] + i + 8));
    }
  }
  for (int m = 0; m < M; ++m) {
    if (i < n) {  // fewer than 16 left: loaded under a mask, the rest zeros
      const __m512 tail = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << (n - i)) - 1), p[m] + i);
      a[m][0] = _mm256_add_ps(a[m][0], _mm512_castps512_ps256(tail));
      a[m][1] = _mm256_add_ps(a[m][1], _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(tail), 1)));
    }
    const __m256 v = _mm256_add_ps(a[m][0], a[m][1]);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));  // lanes k + k+4
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));                                          // + k+2
    out[m] = _mm_cvtss_f32(_mm_add_ss(h, _mm_movehdup_ps(h)));                      // + 1
  }
}

// One run: float by sum_runs_f32 (by sum_runs_avx512 where float_sums_read_512_bits), bfloat16
// by sum_runs_avx512 (512 bits of widened bfloat16 are 256 bits read), with M = 1.
template <class T>
float sum_run_avx512(const T* p, int64_t n) {
  float r;
  if constexpr (std::is_same_v<T, float>) {
    if (float_sums_read_512_bits()) {
      sum_runs_avx512<1>(&p, n, &r);
    } else {
      sum_runs_f32<1>(&p, n, &r);
    }
  } else {
    sum_runs_avx512<1>(&p, n, &r);
  }
  return r;
}

// The sum of one chunk of a whole-tensor sum (n <= kSumChunk elements). A whole float chunk: read
// as four streams at once (its quarters, sum_runs_f32), combined in a fixed order. Four streams
// keep more of memory's bandwidth busy on one core than one stream does (AMD Zen 4, 1 thread:
// 0.7-0.8x the time of one stream). A shorter chunk (the last one, or a small tensor's only one)
// and bfloat16 (half the bytes an element, widened as it is read: one stream was the faster
// there; and float where float_sums_read_512_bits: one stream of 512-bit loads ran as fast as four,
// AMD Zen 5): sum_run_avx512, one stream, so a sum of up to kSumChunk elements has the bits of one run.
template <class T>
float sum_chunk_avx512(const T* p, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (n == kSumChunk && !float_sums_read_512_bits()) {
      constexpr int kStreams = 4;
      constexpr int64_t q = kSumChunk / kStreams;
      const float* quarters[kStreams] = {p, p + q, p + 2 * q, p + 3 * q};
      float sums[kStreams];
      sum_runs_f32<kStreams>(quarters, q, sums);
      return (sums[0] + sums[1]) + (sums[2] + sums[3]);
    }
  }
  return sum_run_avx512(p, n);
}
#endif

// R over one contiguous run of a float or double type (Eigen's packets), or of bfloat16 (widened
// a block at a time, the blocks combined in order: kernels/cpu/vectorized_rows.h); float and
// bfloat16 sums with AVX-512: sum_run_avx512.
template <class R, class T, class A>
constexpr bool kVectorRun = (kEigenVectorizable<T> && std::is_same_v<T, A>) || kFloatBlocks<T>;
template <class R, class T, class A>
A reduce_run(const T* p, int64_t len) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<R, SumReducer> && std::is_same_v<A, float> &&
                (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>)) {
    return sum_run_avx512(p, len);
  }
#endif
  if constexpr (kFloatBlocks<T>) {
    return rows::over_float_blocks(
        p, nullptr, len, R::template identity<float>(), [](const auto& r, const auto&) { return R::eigen(r); },
        [](float a, float b) { return R::combine(a, b); });
  } else {
    return A(R::eigen(ConstArrayMap<T>(p, len)));
  }
}

// Combines the reduced elements starting at in (one output element), in a fixed order.
template <class R, class T, class A>
A reduce_one(const ReduceShape& s, const T* in) {
  const int nr = static_cast<int>(s.red_sizes.size());
  if (nr == 0) return A(in[0]);
  const int64_t inner = s.red_sizes[nr - 1], inner_stride = s.red_strides[nr - 1];
  if constexpr (kVectorRun<R, T, A>) {
    // One contiguous reduced dim (a row sum, the common case): no index bookkeeping per row.
    if (nr == 1 && inner_stride == 1 && inner > 0)
      return R::combine(R::template identity<A>(), reduce_run<R, T, A>(in, inner));
  }
  int64_t outer = 1;
  for (int d = 0; d < nr - 1; ++d) outer *= s.red_sizes[d];
  A acc = R::template identity<A>();
  std::vector<int64_t> idx(static_cast<size_t>(std::max(nr - 1, 1)), 0);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t off = 0;
    for (int d = 0; d < nr - 1; ++d) off += idx[d] * s.red_strides[d];
    const T* p = in + off;
    if constexpr (kVectorRun<R, T, A>) {
      if (inner_stride == 1 && inner > 0) {
        acc = R::combine(acc, reduce_run<R, T, A>(p, inner));
      } else {
        for (int64_t k = 0; k < inner; ++k) acc = R::combine(acc, A(p[k * inner_stride]));
      }
    } else {
      for (int64_t k = 0; k < inner; ++k) acc = R::combine(acc, A(p[k * inner_stride]));
    }
    for (int d = nr - 2; d >= 0; --d) {
      if (++idx[d] < s.red_sizes[d]) break;
      idx[d] = 0;
    }
  }
  return acc;
}

// Column sums: acc[c] = combine(...combine(acc[c], rows[0][c])..., rows[M - 1][c]) for c < n, in
// that order (M rows per pass over the accumulators: one load and store of acc per M inputs).
// Every column independent, so the compiler vectorises across c (bfloat16 widened by shifts).
constexpr int kColumnRows = 8;
template <class R, int M, class A, class T>
void column_rows(A* __restrict acc, const T* const* rows, int64_t n) {
  const T* __restrict p[M];
  for (int j = 0; j < M; ++j) p[j] = rows[j];
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) {
    A a = acc[c];
    for (int j = 0; j < M; ++j) a = R::combine(a, A(p[j][c]));
    acc[c] = a;
  }
}

#if defined(__AVX512F__)
// Sums of float or bfloat16 rows, 16 columns a vector: the same order as the loop above.
template <int M, class T>
void column_sum_rows_avx512(float* acc, const T* const* rows, int64_t n) {
  auto load = [](const T* p) { return load16_as_float(p); };
  int64_t c = 0;
  for (; c + 32 <= n; c += 32) {
    __m512 a0 = _mm512_loadu_ps(acc + c), a1 = _mm512_loadu_ps(acc + c + 16);
    for (int j = 0; j < M; ++j) {
      a0 = _mm512_add_ps(a0, load(rows[j] + c));
      a1 = _mm512_add_ps(a1, load(rows[j] + c + 16));
    }
    _mm512_storeu_ps(acc + c, a0);
    _mm512_storeu_ps(acc + c + 16, a1);
  }
  for (; c < n; ++c) {
    float a = acc[c];
    for (int j = 0; j < M; ++j) a += float(rows[j][c]);
    acc[c] = a;
  }
}
#endif

// column_rows, vectorised by hand for float and bfloat16 sums where AVX-512 is compiled in.
template <class R, int M, class A, class T>
void column_rows_dispatch(A* acc, const T* const* rows, int64_t n) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<R, SumReducer> && std::is_same_v<A, float> &&
                (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>)) {
    column_sum_rows_avx512<M>(acc, rows, n);
    return;
  }
#endif
  column_rows<R, M>(acc, rows, n);
}

// out[kept] = reduce(in[kept, reduced]) * scale  (scale = 1/n for mean)
template <class R, class T>
void reduce_kernel(const ReduceShape& s, T* out, const T* in, double scale) {
  using A = acc_t<T>;
  const int64_t n_out = s.kept_numel();
  const int nk = static_cast<int>(s.kept_sizes.size());
  auto in_offset = [&](int64_t linear, int64_t* out_off) {
    int64_t off = 0, o = 0;
    for (int d = nk - 1; d >= 0; --d) {
      int64_t i = linear % s.kept_sizes[d];
      linear /= s.kept_sizes[d];
      off += i * s.kept_in_strides[d];
      o += i * s.kept_out_strides[d];
    }
    *out_off = o;
    return off;
  };
  // Column layout: the innermost kept dim is contiguous in input and output and every reduced
  // stride is larger; accumulate whole rows (vectorised over the kept elements).
  bool columns = nk >= 1 && s.kept_in_strides[nk - 1] == 1 && s.kept_out_strides[nk - 1] == 1 &&
                 !s.red_sizes.empty() && s.red_strides.back() != 1 && s.red_numel() > 1;
  if (columns) {
    const int64_t row = s.kept_sizes[nk - 1];
    const int64_t n_rows_out = n_out / row;
    const int64_t red = s.red_numel();
    const int nr = static_cast<int>(s.red_sizes.size());
    // Columns split across the threads; each column summed over the reduced positions in order
    // (the same order for any thread count), kColumnRows rows at a time into a strip of
    // accumulators in L1.
    parallel_for(0, row, std::max<int64_t>(kGrainSize / std::max<int64_t>(red, 1), 16), [&](int64_t cb, int64_t ce) {
      std::vector<A> acc(static_cast<size_t>(ce - cb));
      std::vector<int64_t> idx(static_cast<size_t>(nr), 0);
      for (int64_t r = 0; r < n_rows_out; ++r) {
        int64_t out_off;
        int64_t base = in_offset(r * row, &out_off);
        std::fill(acc.begin(), acc.end(), R::template identity<A>());
        std::fill(idx.begin(), idx.end(), 0);
        const T* rows[kColumnRows];
        for (int64_t k = 0; k < red;) {
          const int64_t m = std::min<int64_t>(kColumnRows, red - k);
          for (int64_t j = 0; j < m; ++j, ++k) {  // the next m reduced positions, in order
            int64_t off = 0;
            for (int d = 0; d < nr; ++d) off += idx[d] * s.red_strides[d];
            rows[j] = in + base + off + cb;
            for (int d = nr - 1; d >= 0; --d) {
              if (++idx[d] < s.red_sizes[d]) break;
              idx[d] = 0;
            }
          }
          if (m == kColumnRows) {
            column_rows_dispatch<R, kColumnRows>(acc.data(), rows, ce - cb);
          } else {
            for (int64_t j = 0; j < m; ++j) column_rows_dispatch<R, 1>(acc.data(), rows + j, ce - cb);
          }
        }
        for (int64_t c = 0; c < ce - cb; ++c) out[out_off + cb + c] = T(acc[c] * A(scale));
      }
    });
    return;
  }
  if (n_out == 1) {
    // One output over reduced dims that make one contiguous run (sum(x) of a contiguous x): the
    // run cut into chunks of kSumChunk elements whatever the thread count, each chunk reduced on
    // one thread, the chunks' results combined in order: the same bits for any thread count.
    bool one_run = !s.red_sizes.empty() && s.red_strides.back() == 1;
    for (size_t d = 0; one_run && d + 1 < s.red_sizes.size(); ++d)
      one_run = s.red_strides[d] == s.red_strides[d + 1] * s.red_sizes[d + 1];
    if (one_run) {
      const int64_t n = s.red_numel(), chunks = (n + kSumChunk - 1) / kSumChunk;
      std::vector<A> partial(static_cast<size_t>(chunks), R::template identity<A>());
      ReduceShape part;
      part.red_strides = {1};
      parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
        ReduceShape mine = part;
        for (int64_t c = cb; c < ce; ++c) {
          const int64_t len = std::min(n, (c + 1) * kSumChunk) - c * kSumChunk;
          const T* chunk = in + c * kSumChunk;
#if defined(__AVX512F__)
          if constexpr (std::is_same_v<R, SumReducer> && std::is_same_v<A, float> &&
                        (std::is_same_v<T, float> || std::is_same_v<T, BFloat16>)) {
            partial[static_cast<size_t>(c)] = sum_chunk_avx512(chunk, len);
            continue;
          }
#endif
          mine.red_sizes = {len};
          partial[static_cast<size_t>(c)] = reduce_one<R, T, A>(mine, chunk);
        }
      });
      A acc = R::template identity<A>();
      for (A p : partial) acc = R::combine(acc, p);
      out[0] = T(acc * A(scale));
      return;
    }
    out[0] = T(reduce_one<R, T, A>(s, in) * A(scale));
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(s.red_numel(), 1));
  // Row sums (a contiguous last dim) go a row at a time, one stream each (reduce_run's 256-bit
  // loads on Zen 4 and the Xeon, 512-bit on Zen 5). Eight rows read at once, as float rows went
  // before, took longer on AMD Zen 4 ([4096, 4096] f32, the kernels alone, 1 thread: 1.95-2.09
  // against 1.48-1.68 ms reading one tensor again, 2.20 against 1.91 ms reading three in turn; 2
  // threads alike), and bench/ops' row beside PyTorch was 1.22x its time at 2 threads.
  parallel_for(0, n_out, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t out_off;
      int64_t off = in_offset(i, &out_off);
      out[out_off] = T(reduce_one<R, T, A>(s, in + off) * A(scale));
    }
  });
}

}  // namespace remat::kernels::cpu
