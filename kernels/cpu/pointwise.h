// Mirrors ATen/native/cpu/UnaryOpsKernel.cpp and BinaryOpsKernel.cpp: elementwise loops.
//
// Each op is a struct with a scalar form (any element type, computed in `acc_t`) and, where
// Eigen has a vectorized form, an `array` form used when every operand is contiguous.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "engine/core/bfloat16.h"
#include "kernels/cpu/bfloat16_blocks.h"
#include "kernels/cpu/cpu_model.h"
#include "kernels/cpu/eigen.h"
#include "kernels/cpu/loops.h"
#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/streaming_store.h"
#include "kernels/cpu/x86_intrinsics.h"

namespace remat::kernels::cpu {

// Arithmetic type for an element type: 16-bit floats compute in float.
template <class T> struct AccType { using type = T; };
template <> struct AccType<BFloat16> { using type = float; };
template <> struct AccType<Half> { using type = float; };
template <class T> using acc_t = typename AccType<T>::type;

template <class T>
constexpr bool kEigenVectorizable = std::is_same_v<T, float> || std::is_same_v<T, double>;
// bfloat16 runs the float kernels on widened blocks (kernels/cpu/bfloat16_blocks.h).
template <class T>
constexpr bool kFloatBlocks = std::is_same_v<T, BFloat16>;

template <class T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// ---- unary ops: y = f(x) ----
#define REMAT_UNARY_OP(NAME, SCALAR, ARRAY)                             \
  struct NAME {                                                         \
    template <class T> static T scalar(T x) { return SCALAR; }          \
    template <class A> static auto array(const A& x) { return ARRAY; } \
  };
// Eigen's -x is 0 - x (pnegate), +0 for +0; the product by -1 flips the sign of every value
REMAT_UNARY_OP(NegOp, -x, x * typename A::Scalar(-1))
REMAT_UNARY_OP(ExpOp, std::exp(x), x.unaryExpr(FullRangeExp()))  // subnormal results, exp(88.7f): eigen.h
REMAT_UNARY_OP(LogOp, std::log(x), x.unaryExpr(FullRangeLog()))  // subnormals too: kernels/cpu/eigen.h
REMAT_UNARY_OP(SinOp, std::sin(x), x.sin())
REMAT_UNARY_OP(CosOp, std::cos(x), x.cos())
REMAT_UNARY_OP(TanhOp, std::tanh(x), x.tanh())
// The sigmoid through exp, as the scalar form and PyTorch compute it: Eigen's logistic (a rational
// function accurate in absolute terms) was 4.9e-4 from the value in relative terms near x = -9.
// kernel_exp (eigen.h): the kernels' one spelling of exp (no value differs from Eigen's here).
REMAT_UNARY_OP(SigmoidOp, T(1) / (T(1) + std::exp(-x)),
               typename A::Scalar(1) / (typename A::Scalar(1) + kernel_exp(-x)))
// PyTorch's relu (clamp_min(x, 0)): NaN and -0 come out as they went in. Eigen's max(x, 0) is
// vmaxps(0, x), which returns x for a NaN and for -0 too.
REMAT_UNARY_OP(ReluOp, x < T(0) ? T(0) : x, x.max(typename A::Scalar(0)))
REMAT_UNARY_OP(SqrtOp, std::sqrt(x), x.unaryExpr(IeeeSqrt()))  // kernels/cpu/eigen.h
REMAT_UNARY_OP(RsqrtOp, T(1) / std::sqrt(x), typename A::Scalar(1) / x.unaryExpr(IeeeSqrt()))
REMAT_UNARY_OP(AbsOp, std::abs(x), x.abs())
REMAT_UNARY_OP(SiluOp, x / (T(1) + std::exp(-x)), x / (typename A::Scalar(1) + kernel_exp(-x)))
#undef REMAT_UNARY_OP

template <class Op, class T>
void unary_kernel(const LoopShape& s, T* out, const T* in) {
  if constexpr (kEigenVectorizable<T>) {
    if (s.is_contiguous()) {
      parallel_for(0, s.numel(), kGrainSize, [&](int64_t b, int64_t e) {
        ArrayMap<T>(out + b, e - b) = Op::array(ConstArrayMap<T>(in + b, e - b));
      });
      return;
    }
  } else if constexpr (kFloatBlocks<T>) {
    if (s.is_contiguous()) {
      if constexpr (std::is_same_v<Op, ReluOp>) {
        // relu on the bits, 32 to a vector: a value below zero (the sign set, not -0, not NaN)
        // becomes +0, anything else stays; widening to float cost half of copy's bandwidth.
        const uint16_t* x = reinterpret_cast<const uint16_t*>(in);
        uint16_t* o = reinterpret_cast<uint16_t*>(out);
        constexpr uint16_t kInf = 0x7F80;  // bfloat16's +inf: a larger magnitude is a NaN
        parallel_for(0, s.numel(), kGrainSize, [&](int64_t b, int64_t e) {
#pragma omp simd
          for (int64_t k = b; k < e; ++k) {
            const uint16_t v = x[k], magnitude = v & 0x7FFF;
            o[k] = (v & 0x8000) && magnitude != 0 && magnitude <= kInf ? uint16_t(0) : v;
          }
        });
        return;
      }
      map_bf16_blocks<1>(out, {in}, s.numel(), [](float* o, const float* const* x, int64_t len) {
        ArrayMap<float>(o, len) = Op::array(ConstArrayMap<float>(x[0], len));
      });
      return;
    }
  }
  parallel_for_each_run(s, [&](const auto& off, int64_t n, const auto& st) {
    T* o = out + off[0];
    const T* x = in + off[1];
    for (int64_t k = 0; k < n; ++k) o[k * st[0]] = T(Op::scalar(acc_t<T>(x[k * st[1]])));
  });
}

// Unary op with one scalar parameter: y = f(x, p).
template <class T, class F>
void unary_scalar_kernel(const LoopShape& s, T* out, const T* in, const F& f) {
  if constexpr (kFloatBlocks<T>) {
    if (s.is_contiguous()) {
      map_bf16_blocks<1>(out, {in}, s.numel(), [&](float* o, const float* const* x, int64_t len) {
        const float* xi = x[0];
#pragma omp simd
        for (int64_t k = 0; k < len; ++k) o[k] = float(f(xi[k]));
      });
      return;
    }
  }
  parallel_for_each_run(s, [&](const auto& off, int64_t n, const auto& st) {
    T* o = out + off[0];
    const T* x = in + off[1];
    if (st[0] == 1 && st[1] == 1) {
#pragma omp simd
      for (int64_t k = 0; k < n; ++k) o[k] = T(f(acc_t<T>(x[k])));
      return;
    }
    for (int64_t k = 0; k < n; ++k) o[k * st[0]] = T(f(acc_t<T>(x[k * st[1]])));
  });
}

// ---- binary ops: y = f(a, b), with broadcasting through zero strides ----
#define REMAT_BINARY_OP(NAME, SCALAR, ARRAY)                                                 \
  struct NAME {                                                                              \
    template <class T> static T scalar(T a, T b) { return SCALAR; }                          \
    template <class A, class B> static auto array(const A& a, const B& b) { return ARRAY; } \
  };
REMAT_BINARY_OP(AddOp, a + b, a + b)
REMAT_BINARY_OP(SubOp, a - b, a - b)
REMAT_BINARY_OP(MulOp, a * b, a * b)
REMAT_BINARY_OP(DivOp, a / b, a / b)
#undef REMAT_BINARY_OP

// One float block of a binary op (the bfloat16 path).
template <class Op>
void binary_float_block(float* o, const float* const* x, int64_t len) {
  ArrayMap<float>(o, len) = Op::array(ConstArrayMap<float>(x[0], len), ConstArrayMap<float>(x[1], len));
}

#if defined(__AVX512F__)
// A bfloat16 binary op over one run, 32 elements (two vectors of 16 lanes) at a time, with no
// buffer: each input contiguous (stride 1) or one value broadcast (stride 0), widened exactly, Op in
// float (GCC's vector arithmetic on __m512), rounded as BFloat16's conversion: the bits of the
// widened-block path.
// `stream`: o's whole 64-byte lines written around the caches (streaming_store.h); the caller fences.
// Otherwise both inputs are prefetched ahead (prefetch.h): in a bf16 step the residual stream's add
// read them from memory, 0.079-0.083 -> 0.068-0.069 ms a call (1 thread; float's loop gained nothing).
template <class Op>
void binary_bf16_run_avx512(BFloat16* o, const BFloat16* x, const BFloat16* y, int64_t sx, int64_t sy, int64_t n,
                            bool stream = false) {
  const __m512 xb = _mm512_set1_ps(float(*x)), yb = _mm512_set1_ps(float(*y));
  auto r16 = [&](int64_t j) {  // 16 results from element j
    return Op::scalar(sx ? bf16x16_to_float(x + j) : xb, sy ? bf16x16_to_float(y + j) : yb);
  };
  int64_t i = 0;
  if (stream) {
    i = elements_to_alignment(o, 64, n);
    if (i > 0) binary_bf16_run_avx512<Op>(o, x, y, sx, sy, i);
    for (; i + 32 <= n; i += 32)  // a whole line a store
      _mm512_stream_si512(reinterpret_cast<__m512i*>(o + i), float_to_bf16x32(r16(i), r16(i + 16)));
  }
  for (; i + 32 <= n; i += 32) {  // two vectors a store (float_to_bf16x32: one check)
    if (sx != 0) prefetch_ahead(x + i);  // a broadcast input (stride 0) is one value, in a register
    if (sy != 0) prefetch_ahead(y + i);
    store32_from_float(o + i, r16(i), r16(i + 16));
  }
  for (; i + 16 <= n; i += 16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), float_to_bf16x16(r16(i)));
  if (i == n) return;
  BFloat16 tx[16] = {}, ty[16] = {}, to[16];
  for (int64_t k = i; k < n; ++k) tx[k - i] = x[k * sx], ty[k - i] = y[k * sy];
  binary_bf16_run_avx512<Op>(to, tx, ty, 1, 1, 16);
  for (int64_t k = i; k < n; ++k) o[k] = to[k - i];
}

// A float binary op over one contiguous run, 256 bits at a time (Op in GCC's vector arithmetic
// on __m256): on AMD Zen 4, 512-bit loads and stores took 1.1x as long as these for acc += b and
// c = a + b at [4096, 4096] (1 thread, both timed in one process), and PyTorch's add_kernel
// runs its AVX2 build on AVX-512 machines too (REGISTER_DISPATCH leaves the AVX512 slot empty:
// ATen/native/DispatchStub.h). Element by element, so the bits of any other loop.
// `stream`: o's whole 64-byte lines written around the caches (streaming_store.h); the caller fences.
template <class Op>
void binary_f32_run_avx(float* o, const float* x, const float* y, int64_t n, bool stream = false) {
  int64_t i = 0;
  if (stream) {
    i = elements_to_alignment(o, 64, n);
    binary_f32_run_avx<Op>(o, x, y, i);
    for (; i + 16 <= n; i += 16) {
      const __m256 r0 = Op::scalar(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i));
      const __m256 r1 = Op::scalar(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8));
      _mm256_stream_ps(o + i, r0);
      _mm256_stream_ps(o + i + 8, r1);
    }
  }
  for (; i + 16 <= n; i += 16) {
    const __m256 r0 = Op::scalar(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i));
    const __m256 r1 = Op::scalar(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8));
    _mm256_storeu_ps(o + i, r0);
    _mm256_storeu_ps(o + i + 8, r1);
  }
  for (; i < n; ++i) o[i] = Op::scalar(x[i], y[i]);
}

// x op s over one contiguous bfloat16 run with a float scalar (a wrapped number stays float, as
// in PyTorch's opmath), 32 elements at a time, no buffer: the bits of the widened-block path.
template <class Op>
void scalar_bf16_run_avx512(BFloat16* o, const BFloat16* x, float s, int64_t n) {
  const __m512 sb = _mm512_set1_ps(s);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)  // two vectors a store (store32_from_float: one check)
    store32_from_float(o + i, Op::scalar(bf16x16_to_float(x + i), sb), Op::scalar(bf16x16_to_float(x + i + 16), sb));
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), float_to_bf16x16(Op::scalar(bf16x16_to_float(x + i), sb)));
  if (i == n) return;
  BFloat16 tx[16] = {}, to[16];
  for (int64_t k = i; k < n; ++k) tx[k - i] = x[k];
  scalar_bf16_run_avx512<Op>(to, tx, s, 16);
  for (int64_t k = i; k < n; ++k) o[k] = to[k - i];
}
#endif

// out = in op s for a binary Op and a scalar s in the accumulation type (add, sub, mul, div with
// a number). bfloat16 contiguous with AVX-512: scalar_bf16_run_avx512 (through widened blocks a
// bf16 scores * scale took as long as PyTorch's; 2 threads, [8, 4, 128, 128]); else
// unary_scalar_kernel.
template <class Op, class T>
void scalar_op_kernel(const LoopShape& s, T* out, const T* in, acc_t<T> scalar) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, BFloat16>) {
    if (s.is_contiguous()) {
      parallel_for(0, s.numel(), kGrainSize, [&](int64_t lo, int64_t hi) {
        scalar_bf16_run_avx512<Op>(out + lo, in + lo, scalar, hi - lo);
      });
      return;
    }
  }
#endif
  unary_scalar_kernel(s, out, in, [scalar](auto x) { return Op::scalar(x, static_cast<decltype(x)>(scalar)); });
}

template <class Op, class T>
void binary_kernel(const LoopShape& s, T* out, const T* a, const T* b) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    if (s.is_contiguous()) {
      // In place (acc += b) the output's lines are read first anyway: nothing to save.
      const bool stream = out != a && out != b && stream_output(3 * s.numel() * static_cast<int64_t>(sizeof(T)));
      parallel_for(0, s.numel(), kGrainSize, [&](int64_t lo, int64_t hi) {
        binary_f32_run_avx<Op>(out + lo, a + lo, b + lo, hi - lo, stream);
        if (stream) stream_fence();
      });
      return;
    }
  }
#endif
  if constexpr (kEigenVectorizable<T>) {
    if (s.is_contiguous()) {
      parallel_for(0, s.numel(), kGrainSize, [&](int64_t lo, int64_t hi) {
        ArrayMap<T>(out + lo, hi - lo) =
            Op::array(ConstArrayMap<T>(a + lo, hi - lo), ConstArrayMap<T>(b + lo, hi - lo));
      });
      return;
    }
  } else if constexpr (kFloatBlocks<T>) {
    if (s.is_contiguous()) {
#if defined(__AVX512F__)
      if constexpr (std::is_same_v<T, BFloat16>) {
        const bool stream = out != a && out != b && stream_output(3 * s.numel() * static_cast<int64_t>(sizeof(T)));
        parallel_for(0, s.numel(), kGrainSize, [&](int64_t lo, int64_t hi) {
          binary_bf16_run_avx512<Op>(out + lo, a + lo, b + lo, 1, 1, hi - lo, stream);
          if (stream) stream_fence();
        });
        return;
      }
#endif
      map_bf16_blocks<2>(out, {a, b}, s.numel(), binary_float_block<Op>);
      return;
    }
  }
  parallel_for_each_run(s, [&](const auto& off, int64_t n, const auto& st) {
    T* o = out + off[0];
    const T* x = a + off[1];
    const T* y = b + off[2];
    if constexpr (kEigenVectorizable<T>) {
      if (st[0] == 1 && st[1] == 1 && st[2] == 0) {  // tensor op scalar-in-this-run
        ArrayMap<T>(o, n) = Op::array(ConstArrayMap<T>(x, n), Eigen::Array<T, Eigen::Dynamic, 1>::Constant(n, *y));
        return;
      }
      if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
        ArrayMap<T>(o, n) = Op::array(Eigen::Array<T, Eigen::Dynamic, 1>::Constant(n, *x), ConstArrayMap<T>(y, n));
        return;
      }
      if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
        ArrayMap<T>(o, n) = Op::array(ConstArrayMap<T>(x, n), ConstArrayMap<T>(y, n));
        return;
      }
    }
    if constexpr (kFloatBlocks<T>) {
      // Each input contiguous or broadcast over the run (a bias row, a scalar).
      if (st[0] == 1 && (st[1] == 0 || st[1] == 1) && (st[2] == 0 || st[2] == 1)) {
#if defined(__AVX512F__)
        if constexpr (std::is_same_v<T, BFloat16>) {
          binary_bf16_run_avx512<Op>(o, x, y, st[1], st[2], n);
          return;
        }
#endif
        map_bf16_run<2>(o, {x, y}, {st[1], st[2]}, n, binary_float_block<Op>);
        return;
      }
    }
    for (int64_t k = 0; k < n; ++k)
      o[k * st[0]] = T(Op::scalar(acc_t<T>(x[k * st[1]]), acc_t<T>(y[k * st[2]])));
  });
}

// Binary op with a functor: y = f(a, b) for any element types (masks, mixed types).
template <class O, class A, class B, class F>
void binary_map(const LoopShape& s, O* out, const A* a, const B* b, const F& f) {
  parallel_for_each_run(s, [&](const auto& off, int64_t n, const auto& st) {
    O* o = out + off[0];
    const A* x = a + off[1];
    const B* y = b + off[2];
    if (st[0] == 1 && st[1] == 1 && (st[2] == 0 || st[2] == 1)) {
      // Unit strides (b possibly broadcast over the run): a loop the compiler vectorises; a mask
      // select (masked_fill) otherwise runs one element at a time through the strided indexing.
      // The local copy of f lets the compiler keep its captures in registers (it cannot prove
      // that the caller's closure does not alias out).
      const F g = f;
      if (st[2] == 1) {
#pragma omp simd
        for (int64_t k = 0; k < n; ++k) o[k] = g(x[k], y[k]);
      } else {
        const B yk = *y;
#pragma omp simd
        for (int64_t k = 0; k < n; ++k) o[k] = g(x[k], yk);
      }
      return;
    }
    for (int64_t k = 0; k < n; ++k) o[k * st[0]] = f(x[k * st[1]], y[k * st[2]]);
  });
}

// Ternary functor loop: y = f(a, b, c).
template <class O, class A, class B, class C, class F>
void ternary_map(const LoopShape& s, O* out, const A* a, const B* b, const C* c, const F& f) {
  parallel_for_each_run(s, [&](const auto& off, int64_t n, const auto& st) {
    O* o = out + off[0];
    const A* x = a + off[1];
    const B* y = b + off[2];
    const C* z = c + off[3];
    if (st[0] == 1 && st[1] == 1 && st[2] == 1 && st[3] == 1) {
      const F g = f;  // as in binary_map
#pragma omp simd
      for (int64_t k = 0; k < n; ++k) o[k] = g(x[k], y[k], z[k]);
      return;
    }
    for (int64_t k = 0; k < n; ++k) o[k * st[0]] = f(x[k * st[1]], y[k * st[2]], z[k * st[3]]);
  });
}

namespace detail {

// out[i, j] = in[i, j] over the last two dims where out's last dim and in's second-to-last have
// stride 1 (contiguous() of a transpose). Each side is strided across pages on the other's walk,
// so: tiles of kTransposeTile x kTransposeTile elements, each read a whole line at a time into a
// buffer and written a whole line at a time (with power-of-two strides a tile's lines share a
// cache set; a direct walk evicts them before it is done with them). A task is transpose_block()
// rows of out by kTransposeColumns columns: its tiles walk down the rows, so each of in's lines is
// read in runs of transpose_block() elements, and the tasks split a tall block's columns between
// threads.
constexpr int64_t kTransposeTile = 16, kTransposeBlock = 128, kTransposeColumns = 256;
// The row block: kTransposeBlock on the Intel Xeon (measured there; the pages 128 rows touch stay in
// its TLB). On AMD, where runs of 128 elements were too short for the prefetchers: 512 on Zen 5
// (family 0x1A) and later; 4096 x 4096, 1 thread, f32 9.0-10.4 -> 6.4 ms (2 threads 4.7 -> 2.9-3.9),
// bf16 4.6-5.9 -> 3.6-4.0 ms (2.5-2.8 -> 1.5-1.9). 1024 on Zen 3 and 4 (family 0x19; Zen 3
// unmeasured): Zen 4 (model 0x11), 1 thread, in alternation, 128 -> 512: 4096 x 4096 f32 9.8-9.9
// -> 8.6-8.7 ms, bf16 8.6 -> 5.5-5.6; 4096 x 11008 f32 28.3-29.5 -> 22.6-23.0, bf16 24.7-24.8 ->
// 14.5-15.0; then 512 -> 1024 (with the column tasks), three alternations: 4096 x 4096 f32
// unchanged (6.9-7.7 ms), bf16 4.7-5.7 -> 4.0-4.8; 4096 x 11008 f32 20.5-21.8 -> 17.8-18.1, bf16
// 14.0-14.7 -> 11.6-13.0; 2 threads 9.3-9.4 against 10.4-10.7 (f32), 6.3-6.6 against 7.6-8.1
// (bf16); 1024 x 1024 unchanged (1 thread).
inline int64_t transpose_block() {
  static const int64_t side = amd_zen5_or_later() ? 512 : amd_family_19h_or_later() ? 1024 : kTransposeBlock;
  return side;
}
// Outputs of this many bytes and more are written around the caches (non-temporal stores of whole
// 64-byte lines): an ordinary store first reads the line it writes, which a transpose's scattered
// lines pay in full. 4096 x 4096 floats, 1 thread, Xeon with AMX: 11.1-12.0 ms against 23.0-23.5;
// at 4 MiB and less, where the output stays in cache, streaming cost 10-20% more.
constexpr int64_t kTransposeStreamBytes = int64_t{16} << 20;

#if defined(__AVX512F__)
// v[q] = lane q of each of v[0..15], in order: a 16 x 16 transpose of 32-bit lanes in registers
// (pairs interleaved, then quads, then 128-bit lanes gathered; bits moved, never converted).
// Inlined and unrolled (as the tiles' loops around it): at -O2 (Bazel's -c opt) GCC kept it a call
// on arrays in memory, every vector stored and reloaded; L2-resident tiles took 100 ns each, 54
// inlined (AMD Zen 4), the step's k^T copy (bench/ops' `contiguous (k: ...)`) 2x faster.
__attribute__((always_inline)) inline void transpose16x16_epi32(__m512i v[16]) {
  __m512i t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]);
  }
  // v[4 i + k], 128-bit lane L: element 4 L + k of v[4 i .. 4 i + 3]
#pragma GCC unroll 16
  for (int i = 0; i < 4; ++i) {
    const __m512 a = _mm512_castsi512_ps(t[4 * i]), b = _mm512_castsi512_ps(t[4 * i + 1]);
    const __m512 c = _mm512_castsi512_ps(t[4 * i + 2]), d = _mm512_castsi512_ps(t[4 * i + 3]);
    v[4 * i] = _mm512_castps_si512(_mm512_shuffle_ps(a, c, 0x44));
    v[4 * i + 1] = _mm512_castps_si512(_mm512_shuffle_ps(a, c, 0xEE));
    v[4 * i + 2] = _mm512_castps_si512(_mm512_shuffle_ps(b, d, 0x44));
    v[4 * i + 3] = _mm512_castps_si512(_mm512_shuffle_ps(b, d, 0xEE));
  }
#pragma GCC unroll 16
  for (int k = 0; k < 4; ++k) {
    const __m512i a = _mm512_shuffle_i32x4(v[k], v[4 + k], 0x88), b = _mm512_shuffle_i32x4(v[k], v[4 + k], 0xDD);
    const __m512i c = _mm512_shuffle_i32x4(v[8 + k], v[12 + k], 0x88);
    const __m512i d = _mm512_shuffle_i32x4(v[8 + k], v[12 + k], 0xDD);
    t[k] = _mm512_shuffle_i32x4(a, c, 0x88);
    t[8 + k] = _mm512_shuffle_i32x4(a, c, 0xDD);
    t[4 + k] = _mm512_shuffle_i32x4(b, d, 0x88);
    t[12 + k] = _mm512_shuffle_i32x4(b, d, 0xDD);
  }
#pragma GCC unroll 16
  for (int q = 0; q < 16; ++q) v[q] = t[q];
}
#endif

template <class O, class I>
void transpose_copy(const LoopShape& s, O* out, const I* in) {
  const int nd = s.ndim;
  const int64_t R = s.sizes[nd - 2], C = s.sizes[nd - 1];
  const int64_t out_r = s.strides[0][nd - 2], in_c = s.strides[1][nd - 1];
  int64_t outer = 1;
  for (int d = 0; d < nd - 2; ++d) outer *= s.sizes[d];
  const int64_t block = transpose_block();
  const int64_t row_blocks = (R + block - 1) / block, column_blocks = (C + kTransposeColumns - 1) / kTransposeColumns;
  const int64_t grain =
      std::max<int64_t>(1, kGrainSize / std::max<int64_t>(std::min(R, block) * std::min(C, kTransposeColumns), 1));
  constexpr int64_t T = kTransposeTile;
#if defined(__AVX512F__)
  // A 16-bit tile is 32 x 32: its lines, and out's, are whole 64-byte lines.
  constexpr int64_t TW = sizeof(O) == 2 && std::is_same_v<O, I> ? 2 * T : T;
  const bool stream = outer * R * C * static_cast<int64_t>(sizeof(O)) >= kTransposeStreamBytes;
  // One line of out, 64 bytes: around the caches when `stream` and it starts a cache line.
  auto store_line = [stream](O* dst, __m512i line) {
    if (stream && (reinterpret_cast<uintptr_t>(dst) & 63) == 0) {
      _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), line);
    } else {
      _mm512_storeu_si512(dst, line);
    }
  };
#else
  constexpr int64_t TW = T;
#endif
  // One element: the same type moved as is (bits, NaN payloads too, as the vector tiles move them)
  auto convert = [](const I& x) -> O {
    if constexpr (std::is_same_v<O, I>) {
      return x;
    } else {
      return static_cast<O>(static_cast<acc_t<I>>(x));
    }
  };
  // One tile of at most T x T: rows [r0, r0 + rn), columns [c0, c0 + cn) from the bases ob and ib.
  auto tile_copy = [&](int64_t ob, int64_t ib, int64_t r0, int64_t rn, int64_t c0, int64_t cn) {
#if defined(__AVX512F__)
    // 32- and 16-bit elements copied as bits: 16 lines of in loaded (16-bit ones widened to 32-bit
    // lanes), transposed in registers, stored as 16 lines of out (16-bit ones narrowed back)
    if constexpr (std::is_same_v<O, I> && (sizeof(O) == 4 || sizeof(O) == 2) && T == 16) {
      if (rn == T && cn == T) {
        __m512i v[16];
#pragma GCC unroll 16
        for (int64_t c = 0; c < T; ++c) {
          const I* src = in + ib + (c0 + c) * in_c + r0;
          if constexpr (sizeof(O) == 4) {
            v[c] = _mm512_loadu_si512(src);
          } else {
            v[c] = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
          }
        }
        transpose16x16_epi32(v);
#pragma GCC unroll 16
        for (int64_t r = 0; r < T; ++r) {
          O* dst = out + ob + (r0 + r) * out_r + c0;
          if constexpr (sizeof(O) == 4) {
            store_line(dst, v[r]);
          } else {
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm512_cvtepi32_epi16(v[r]));
          }
        }
        return;
      }
    }
#endif
    O tile[T][T];  // [c][r]
    if (rn == T && cn == T) {  // constant trip counts: unrolled vector moves
      for (int64_t c = 0; c < T; ++c) {
        const I* src = in + ib + (c0 + c) * in_c + r0;  // in's lines: r contiguous
        for (int64_t r = 0; r < T; ++r) tile[c][r] = convert(src[r]);
      }
      for (int64_t r = 0; r < T; ++r) {
        O* dst = out + ob + (r0 + r) * out_r + c0;  // out's lines: c contiguous
        for (int64_t c = 0; c < T; ++c) dst[c] = tile[c][r];
      }
      return;
    }
    for (int64_t c = 0; c < cn; ++c)
      for (int64_t r = 0; r < rn; ++r)
        tile[c][r] = convert(in[ib + (c0 + c) * in_c + r0 + r]);
    for (int64_t r = 0; r < rn; ++r)
      for (int64_t c = 0; c < cn; ++c) out[ob + (r0 + r) * out_r + c0 + c] = tile[c][r];
  };
  // One tile of at most TW x TW: whole 32 x 32 16-bit tiles in registers, the rest in T x T tiles.
  auto wide_tile_copy = [&](int64_t ob, int64_t ib, int64_t r0, int64_t rn, int64_t c0, int64_t cn) {
#if defined(__AVX512F__)
    if constexpr (TW == 2 * T) {
      if (rn == TW && cn == TW) {
        // Lines c0 + 2k and c0 + 2k + 1 interleaved: 32-bit units (in[2k][r], in[2k + 1][r]),
        // which is out[r][2k], out[r][2k + 1] in memory order. unpacklo/hi work per 128-bit lane:
        // `lo` holds rows r = 8 L + i (lane L, i < 4), `hi` rows 8 L + 4 + i. Two 16 x 16
        // transposes of those units make each vector one whole line of out.
        __m512i lo[16], hi[16];
#pragma GCC unroll 16
        for (int64_t k = 0; k < T; ++k) {
          const __m512i a = _mm512_loadu_si512(in + ib + (c0 + 2 * k) * in_c + r0);
          const __m512i b = _mm512_loadu_si512(in + ib + (c0 + 2 * k + 1) * in_c + r0);
          lo[k] = _mm512_unpacklo_epi16(a, b);
          hi[k] = _mm512_unpackhi_epi16(a, b);
        }
        transpose16x16_epi32(lo);
        transpose16x16_epi32(hi);
#pragma GCC unroll 16
        for (int64_t q = 0; q < T; ++q) {
          const int64_t r = 8 * (q / 4) + q % 4;
          store_line(out + ob + (r0 + r) * out_r + c0, lo[q]);
          store_line(out + ob + (r0 + r + 4) * out_r + c0, hi[q]);
        }
        return;
      }
      for (int64_t rr = 0; rr < rn; rr += T)
        for (int64_t cc = 0; cc < cn; cc += T)
          tile_copy(ob, ib, r0 + rr, std::min(T, rn - rr), c0 + cc, std::min(T, cn - cc));
      return;
    }
#endif
    tile_copy(ob, ib, r0, rn, c0, cn);
  };
  parallel_for(0, outer * row_blocks * column_blocks, grain, [&](int64_t b, int64_t e) {
    for (int64_t task = b; task < e; ++task) {
      const int64_t t = task / column_blocks, cb = (task % column_blocks) * kTransposeColumns;
      const int64_t cb_end = std::min(C, cb + kTransposeColumns);
      int64_t o = t / row_blocks, ob = 0, ib = 0;
      for (int d = nd - 3; d >= 0; --d) {  // the outer index's offsets
        const int64_t i = o % s.sizes[d];
        o /= s.sizes[d];
        ob += i * s.strides[0][d];
        ib += i * s.strides[1][d];
      }
      const int64_t rb = (t % row_blocks) * block, rb_end = std::min(R, rb + block);
      for (int64_t c0 = cb; c0 < cb_end; c0 += TW)
        for (int64_t r0 = rb; r0 < rb_end; r0 += TW) {
#if defined(__AVX512F__)
          // The next tile's lines, fetched while this one is copied: the hardware prefetchers
          // follow a few sequential streams, not the 2 TW strided ones of a tile.
          if (r0 + 2 * TW <= rb_end && c0 + TW <= cb_end) {
            for (int64_t c = 0; c < TW; ++c)
              _mm_prefetch(reinterpret_cast<const char*>(in + ib + (c0 + c) * in_c + r0 + TW), _MM_HINT_T0);
            if (!stream)
              for (int64_t r = 0; r < TW; ++r)
                _mm_prefetch(reinterpret_cast<const char*>(out + ob + (r0 + TW + r) * out_r + c0), _MM_HINT_ET0);
          }
#endif
          wide_tile_copy(ob, ib, r0, std::min(TW, rb_end - r0), c0, std::min(TW, cb_end - c0));
        }
    }
#if defined(__AVX512F__)
    if (stream) _mm_sfence();  // this thread's streamed lines reach memory before the loop returns
#endif
  });
}

}  // namespace detail

namespace detail {
// n bytes from src to dst (not overlapping). A run of up to 4 KiB (a head's 64 elements, a row of
// cat's inputs) in 32-byte moves inline: a call to memcpy cost about as much as a short copy, and
// 256-bit moves stream faster than memcpy's 512-bit ones on AMD Zen 4.
inline void copy_bytes(void* dst, const void* src, size_t n) {
  if (n > 4096) {
    std::memcpy(dst, src, n);
    return;
  }
  char* d = static_cast<char*>(dst);
  const char* p = static_cast<const char*>(src);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) __builtin_memcpy(d + i, p + i, 32);
  for (; i < n; ++i) d[i] = p[i];
}
}  // namespace detail

// Strided copy with conversion: out = T(in) (contiguous(), to(dtype), copy_, expand materialised).
template <class O, class I>
void copy_kernel(const LoopShape& s, O* out, const I* in) {
  if constexpr (std::is_same_v<O, I>) {
    if (s.is_contiguous()) {
      const bool stream = stream_output(2 * s.numel() * static_cast<int64_t>(sizeof(O)));
      parallel_for(0, s.numel(), kGrainSize, [&](int64_t b, int64_t e) {
        if (stream) {
          copy_bytes_streaming(out + b, in + b, static_cast<size_t>(e - b) * sizeof(O));
          stream_fence();
        } else {
          std::copy(in + b, in + e, out + b);
        }
      });
      return;
    }
  }
  // float <-> bfloat16, contiguous: the vector conversions (bit-identical to the scalar ones)
  if constexpr ((std::is_same_v<O, BFloat16> && std::is_same_v<I, float>) ||
                (std::is_same_v<O, float> && std::is_same_v<I, BFloat16>)) {
    if (s.is_contiguous()) {
      parallel_for(0, s.numel(), kGrainSize, [&](int64_t b, int64_t e) {
        if constexpr (std::is_same_v<O, BFloat16>) {
          float_to_bf16(in + b, out + b, e - b);
        } else {
          bf16_to_float(in + b, out + b, e - b);
        }
      });
      return;
    }
  }
  if (s.ndim >= 2 && s.strides[0][s.ndim - 1] == 1 && s.strides[1][s.ndim - 2] == 1 &&
      s.strides[1][s.ndim - 1] != 1 && s.sizes[s.ndim - 2] >= detail::kTransposeTile &&
      s.sizes[s.ndim - 1] >= detail::kTransposeTile) {  // the strided side would touch a line per element
    detail::transpose_copy(s, out, in);
    return;
  }
  // In blocks of rows (parallel_for_each_row_block): attention's q, k and v copies for bmm are runs
  // of one head's 64 elements, where a run at a time (and a memcpy call each) took 1.7x (f32) and
  // 2.3x (bf16) PyTorch's time.
  parallel_for_each_row_block(s, [&](const auto& off, int64_t n, const auto& st, int64_t rows, const auto& rs) {
    for (int64_t r = 0; r < rows; ++r) {
      O* o = out + off[0] + r * rs[0];
      const I* x = in + off[1] + r * rs[1];
      if (st[0] == 1 && st[1] == 1) {
        // a run of a strided copy (a transpose's rows of head_dim, one input of cat): for the same
        // type the bytes as they are; float <-> bfloat16 through the vector conversions. Widening
        // each bfloat16 to float and back made a bf16 clone four times an f32 one.
        if constexpr (std::is_same_v<O, I>) {
          detail::copy_bytes(o, x, static_cast<size_t>(n) * sizeof(O));
        } else if constexpr (std::is_same_v<O, BFloat16> && std::is_same_v<I, float>) {
          float_to_bf16(x, o, n);
        } else if constexpr (std::is_same_v<O, float> && std::is_same_v<I, BFloat16>) {
          bf16_to_float(x, o, n);
        } else {
          for (int64_t k = 0; k < n; ++k) o[k] = static_cast<O>(static_cast<acc_t<I>>(x[k]));
        }
      } else if constexpr (std::is_same_v<O, I>) {
        for (int64_t k = 0; k < n; ++k) o[k * st[0]] = x[k * st[1]];
      } else {
        for (int64_t k = 0; k < n; ++k) o[k * st[0]] = static_cast<O>(static_cast<acc_t<I>>(x[k * st[1]]));
      }
    }
  });
}

template <class T>
void fill_kernel(const LoopShape& s, T* out, T value) {
  parallel_for_each_run(s, [&](const auto& off, int64_t n, const auto& st) {
    T* o = out + off[0];
    for (int64_t k = 0; k < n; ++k) o[k * st[0]] = value;
  });
}

}  // namespace remat::kernels::cpu
