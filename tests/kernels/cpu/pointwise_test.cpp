// Tests kernels/cpu/pointwise.h (ATen/native/cpu/CopyKernel.cpp's paths): copy_kernel's fast
// paths give what the plain strided walk gives: a transposing copy (tiled) at sizes around the
// tile and block, with outer dims, in f32 and bf16; float <-> bfloat16 conversions bit for bit;
// bfloat16 binary ops (contiguous, a broadcast row, a scalar) as the op in float rounded once; binary
// ops and copies large enough to stream their outputs, bit for bit; the unary ops that Eigen's own
// packet forms got wrong (sqrt, rsqrt, neg, the sigmoid) as IEEE 754 and PyTorch give them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/pointwise.h"

namespace cpu = remat::kernels::cpu;
using remat::BFloat16;

namespace {

// The loop of out[o, i, j] = in[o, j, i] as a contiguous() of a transpose makes it: out
// [outer, R, C] row-major; in [outer, C, R] row-major, read transposed.
// One contiguous run of n elements, output and one input.
cpu::LoopShape contiguous_loop(int64_t n) {
  cpu::LoopShape s;
  s.ndim = 1;
  s.noperands = 2;
  s.sizes = {n};
  s.strides[0] = {1};
  s.strides[1] = {1};
  return s;
}

cpu::LoopShape transposed(int64_t outer, int64_t R, int64_t C) {
  cpu::LoopShape s;
  s.ndim = 3;
  s.noperands = 2;
  s.sizes = {outer, R, C};
  s.strides[0] = {R * C, C, 1};
  s.strides[1] = {R * C, 1, R};
  s.coalesce();
  return s;
}

template <class T>
void check_transpose(int64_t outer, int64_t R, int64_t C) {
  INFO("outer " << outer << ", R " << R << ", C " << C);
  std::vector<T> in(static_cast<size_t>(outer * R * C)), out(in.size(), T(-1.0f));
  for (size_t k = 0; k < in.size(); ++k) in[k] = T(static_cast<float>(k % 251) - 125.0f);
  cpu::copy_kernel(transposed(outer, R, C), out.data(), in.data());
  int64_t wrong = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < C; ++j)
        wrong += float(out[(o * R + i) * C + j]) != float(in[(o * C + j) * R + i]);
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("copy_kernel transposes exactly at sizes around its tile and block, with outer dims", "[pointwise]") {
  // C 48: a 16-bit band of 32 columns then one of 16; R 128/129, 512/513, 1024/1025: the row block's
  // edges (transpose_block(): 128, 512 or 1024, by CPU); C 256/257, 513: the column tasks' edges
  // (kTransposeColumns 256).
  for (int64_t R : {16, 17, 31, 128, 129, 300, 513, 1024, 1025})
    for (int64_t C : {16, 33, 48, 128, 256, 257, 513}) {
      check_transpose<float>(1, R, C);
      check_transpose<BFloat16>(1, R, C);
    }
  check_transpose<float>(3, 40, 50);
  check_transpose<BFloat16>(2, 130, 20);
  check_transpose<float>(2, 8, 64);  // below the tile: the plain walk
}

TEST_CASE("copy_kernel's transposes with outputs large enough to stream", "[pointwise]") {
  // From kTransposeStreamBytes of output on, whole 64-byte lines go around the caches; lines that do
  // not start on 64 bytes (rows of an odd length) take ordinary stores.
  const int64_t floats = cpu::detail::kTransposeStreamBytes / static_cast<int64_t>(sizeof(float));
  check_transpose<float>(1, 2048, floats / 2048);       // every line aligned
  check_transpose<float>(1, 2051, floats / 2048 + 3);   // lines at every offset
  check_transpose<BFloat16>(2, 2048, floats / 2048);    // 16-bit tiles 32 columns wide, two of them
  check_transpose<BFloat16>(1, 4099, floats / 2048 + 5);
}

TEST_CASE("copy_kernel's transposes move bits (NaN payloads, -0, subnormals) for 16-, 32- and 64-bit types",
          "[pointwise]") {
  // the AVX-512 in-register 16 x 16 transposes (32- and 16-bit types) against the portable tiles
  // (double, and a conversion)
  const int64_t outer = 2, R = 48, C = 37;
  auto check = [&](auto zero, auto bits_of_k) {
    using T = decltype(zero);
    std::vector<T> in(static_cast<size_t>(outer * R * C)), out(in.size(), zero);
    for (size_t k = 0; k < in.size(); ++k) in[k] = bits_of_k(k);
    cpu::copy_kernel(transposed(outer, R, C), out.data(), in.data());
    int64_t wrong = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < R; ++i)
        for (int64_t j = 0; j < C; ++j)
          wrong += std::memcmp(&out[(o * R + i) * C + j], &in[(o * C + j) * R + i], sizeof(T)) != 0;
    INFO("element bytes " << sizeof(T));
    CHECK(wrong == 0);
  };
  auto mix = [](size_t k) { return static_cast<uint32_t>(k * 2654435761u) ^ static_cast<uint32_t>(k >> 3); };
  check(0.0f, [&](size_t k) {
    const uint32_t u = mix(k);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  });
  check(BFloat16(), [&](size_t k) {
    BFloat16 b;
    b.bits = static_cast<uint16_t>(mix(k));
    return b;
  });
  check(int32_t{0}, [&](size_t k) { return static_cast<int32_t>(mix(k)); });
  check(int16_t{0}, [&](size_t k) { return static_cast<int16_t>(mix(k)); });
  check(0.0, [&](size_t k) { return static_cast<double>(mix(k)) * 1e-3 - 1e6; });
}

TEST_CASE("copy_kernel converts float <-> bfloat16 as BFloat16's scalar conversion, NaN and rounding included",
          "[pointwise]") {
  std::vector<float> f = {0.0f, -0.0f, 1.0f, 1.00390625f, 1.01171875f, 3.14159f, -2.5e-39f, 1e38f, INFINITY,
                          -INFINITY, NAN};
  for (int k = 0; k < 40; ++k) f.push_back(std::ldexp(1.0f + k / 64.0f, k - 20));
  const int64_t n = static_cast<int64_t>(f.size());
  const cpu::LoopShape s = contiguous_loop(n);
  std::vector<BFloat16> b(f.size());
  cpu::copy_kernel(s, b.data(), f.data());
  std::vector<float> back(f.size());
  cpu::copy_kernel(s, back.data(), b.data());
  for (size_t k = 0; k < f.size(); ++k) {
    INFO(f[k]);
    const BFloat16 want(f[k]);
    CHECK(b[k].bits == want.bits);
    CHECK((std::isnan(back[k]) ? std::isnan(float(want)) : back[k] == float(want)));
  }
}

namespace {

// The loop of out[r, :] = in[r * 3 + 1, :] (runs of `run` elements, the input's rows strided):
// a transpose's rows of head_dim, or one input of cat.
cpu::LoopShape strided_rows(int64_t rows, int64_t run) {
  cpu::LoopShape s;
  s.ndim = 2;
  s.noperands = 2;
  s.sizes = {rows, run};
  s.strides[0] = {run, 1};
  s.strides[1] = {3 * run, 1};
  s.coalesce();
  return s;
}

}  // namespace

TEST_CASE("copy_kernel's strided runs move bits for one type and convert float <-> bfloat16 as the scalar "
          "conversion", "[pointwise]") {
  const int64_t rows = 37, run = 67;  // runs longer than a vector, with a tail
  std::vector<uint16_t> bits(static_cast<size_t>(3 * rows * run));
  for (size_t k = 0; k < bits.size(); ++k) bits[k] = static_cast<uint16_t>(k * 2654435761u >> 7);
  bits[run + 5] = 0x7fc1;  // a NaN with a payload, -0, a subnormal
  bits[run + 6] = 0x8000;
  bits[run + 7] = 0x0001;
  std::vector<BFloat16> in(bits.size()), out(static_cast<size_t>(rows * run));
  std::memcpy(static_cast<void*>(in.data()), bits.data(), bits.size() * 2);
  cpu::copy_kernel(strided_rows(rows, run), out.data(), in.data() + run);
  std::vector<float> wide(out.size()), fin(in.size());
  for (size_t k = 0; k < in.size(); ++k) fin[k] = std::ldexp(float(int(k % 1001) - 500), int(k % 60) - 30);
  cpu::copy_kernel(strided_rows(rows, run), wide.data(), in.data() + run);
  std::vector<BFloat16> narrow(out.size());
  cpu::copy_kernel(strided_rows(rows, run), narrow.data(), fin.data() + run);
  int64_t wrong = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < run; ++j) {
      const size_t o = static_cast<size_t>(r * run + j), i = static_cast<size_t>((r * 3 + 1) * run + j);
      wrong += out[o].bits != in[i].bits;
      const float want = float(in[i]);
      wrong += std::isnan(want) ? !std::isnan(wide[o]) : std::memcmp(&wide[o], &want, 4) != 0;
      wrong += narrow[o].bits != BFloat16(fin[i]).bits;
    }
  CHECK(wrong == 0);
}

namespace {

// out[i, j] = a[i, j] op b[i or 0, j or 0]: the loop binary_kernel gets for [rows, cols] with b
// contiguous, a row broadcast over the rows (a bias), or one value (a scalar).
enum class Operand { kTensor, kRow, kScalar };

template <class Op>
void check_bf16_binary(int64_t rows, int64_t cols, Operand kind, bool scalar_first) {
  INFO("rows " << rows << ", cols " << cols << ", kind " << int(kind) << ", scalar first " << scalar_first);
  std::vector<BFloat16> a(static_cast<size_t>(rows * cols)), b(a.size()), out(a.size());
  for (size_t k = 0; k < a.size(); ++k) {
    a[k] = BFloat16(std::sin(0.37f * float(k)) * 5.0f);
    b[k] = BFloat16(std::cos(0.21f * float(k)) * 3.0f + 0.03125f);
  }
  const int64_t row_stride = kind == Operand::kTensor ? cols : 0, col_stride = kind == Operand::kScalar ? 0 : 1;
  cpu::LoopShape s;
  s.ndim = 2;
  s.noperands = 3;
  s.sizes = {rows, cols};
  s.strides[0] = {cols, 1};
  s.strides[scalar_first ? 2 : 1] = {cols, 1};
  s.strides[scalar_first ? 1 : 2] = {row_stride, col_stride};
  s.coalesce();
  const BFloat16* x = scalar_first ? b.data() : a.data();
  const BFloat16* y = scalar_first ? a.data() : b.data();
  cpu::binary_kernel<Op>(s, out.data(), x, y);
  int64_t wrong = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const float t = float(a[i * cols + j]), u = float(b[i * row_stride + j * col_stride]);
      const BFloat16 want(scalar_first ? Op::scalar(u, t) : Op::scalar(t, u));
      wrong += std::memcmp(&out[i * cols + j], &want, sizeof want) != 0;
    }
  CHECK(wrong == 0);
}

}  // namespace

TEMPLATE_TEST_CASE("bfloat16 binary ops give the bits of the op in float, rounded once", "[pointwise]", cpu::AddOp,
                   cpu::SubOp, cpu::MulOp, cpu::DivOp) {
  // runs with whole 16-lane vectors, a tail, and only a tail; more than one thread's chunk
  for (int64_t cols : {int64_t(5), int64_t(16), int64_t(77), int64_t(4096)}) {
    for (int64_t rows : {int64_t(1), int64_t(3), int64_t(20)}) {
      for (Operand kind : {Operand::kTensor, Operand::kRow, Operand::kScalar}) {
        check_bf16_binary<TestType>(rows, cols, kind, false);
        check_bf16_binary<TestType>(rows, cols, kind, true);
      }
    }
  }
}

TEMPLATE_TEST_CASE("bfloat16 ops with a number give the bits of the op in float with the number as float, rounded "
                   "once", "[pointwise]", cpu::AddOp, cpu::SubOp, cpu::MulOp, cpu::DivOp) {
  // 0.1 has no bfloat16: rounding it first would change the products (PyTorch keeps a wrapped
  // number in opmath, float); contiguous runs with whole vectors, a tail, only a tail, several chunks
  for (int64_t n : {int64_t(5), int64_t(16), int64_t(77), int64_t(100000)}) {
    INFO("n " << n);
    std::vector<BFloat16> a(static_cast<size_t>(n)), out(a.size());
    for (size_t k = 0; k < a.size(); ++k) a[k] = BFloat16(std::sin(0.37f * float(k)) * 5.0f);
    const cpu::LoopShape s = contiguous_loop(n);
    cpu::scalar_op_kernel<TestType>(s, out.data(), a.data(), 0.1f);
    int64_t wrong = 0;
    for (int64_t k = 0; k < n; ++k) {
      const BFloat16 want(TestType::scalar(float(a[k]), 0.1f));
      wrong += std::memcmp(&out[k], &want, sizeof want) != 0;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("relu is PyTorch's clamp_min(x, 0): NaN and -0 as they are, contiguous or strided, float and bfloat16",
          "[pointwise]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {nan, -nan, -0.0f, 0.0f, -1.0f, 2.5f, -INFINITY, INFINITY, -1e-40f, 1e-40f};
  // PyTorch 2.15 on the CPU gives these for f32 and bf16 alike (torch.relu).
  auto check = [](const std::vector<float>& x, const std::vector<float>& y) {
    for (size_t k = 0; k < x.size(); ++k) {
      INFO(k << ": relu(" << x[k] << ") = " << y[k]);
      if (std::isnan(x[k])) {
        CHECK(std::isnan(y[k]));  // a NaN's sign: rounding to bfloat16 makes any NaN 0x7FC0 (as c10's)
      } else if (x[k] < 0) {
        CHECK((y[k] == 0.0f && !std::signbit(y[k])));
      } else {
        CHECK((y[k] == x[k] && std::signbit(y[k]) == std::signbit(x[k])));
      }
    }
  };
  const int64_t n = static_cast<int64_t>(x.size());
  for (bool strided : {false, true}) {
    INFO("strided " << strided);
    cpu::LoopShape s;
    s.ndim = 1;
    s.noperands = 2;
    s.sizes = {n};
    s.strides[0] = {1};
    s.strides[1] = {strided ? 2 : 1};
    std::vector<float> in(static_cast<size_t>(2 * n)), out(static_cast<size_t>(n));
    std::vector<BFloat16> inb(in.size()), outb(out.size());
    for (int64_t k = 0; k < n; ++k) {
      in[static_cast<size_t>(strided ? 2 * k : k)] = x[static_cast<size_t>(k)];
      inb[static_cast<size_t>(strided ? 2 * k : k)] = BFloat16(x[static_cast<size_t>(k)]);
    }
    inb[strided ? 2 : 1].bits = 0xFFC1;  // a negative NaN with a payload, whatever BFloat16(-nan) gives
    cpu::unary_kernel<cpu::ReluOp>(s, out.data(), in.data());
    check(x, out);
    cpu::unary_kernel<cpu::ReluOp>(s, outb.data(), inb.data());
    std::vector<float> xb(x.size()), widened(outb.size());
    for (size_t k = 0; k < outb.size(); ++k) {
      xb[k] = float(inb[static_cast<size_t>(strided ? 2 * k : k)]);  // x as bfloat16 holds it
      widened[k] = float(outb[k]);
    }
    check(xb, widened);
  }
}

TEST_CASE("copy_kernel's same-type runs copy every byte, short (inline moves) or long (memcpy)", "[pointwise]") {
  for (size_t n : {size_t{0}, size_t{1}, size_t{31}, size_t{32}, size_t{33}, size_t{64}, size_t{511}, size_t{512},
                   size_t{513}, size_t{1000}}) {
    INFO(n << " bytes");
    std::vector<unsigned char> src(n + 8), dst(n + 8, 0xEE);
    for (size_t k = 0; k < src.size(); ++k) src[k] = static_cast<unsigned char>(k * 37 + 1);
    cpu::detail::copy_bytes(dst.data(), src.data(), n);
    CHECK(std::memcmp(dst.data(), src.data(), n) == 0);
    CHECK(std::count(dst.begin() + static_cast<std::ptrdiff_t>(n), dst.end(), 0xEE) == 8);  // nothing past n
  }
  for (int64_t run : {int64_t{64}, int64_t{200}}) {  // 256 and 800 bytes a run of floats
    INFO("runs of " << run << " floats");
    const int64_t rows = 9;
    std::vector<float> in(static_cast<size_t>(3 * rows * run)), out(static_cast<size_t>(rows * run), -1.0f);
    for (size_t k = 0; k < in.size(); ++k) in[k] = float(k) * 0.5f;
    cpu::copy_kernel(strided_rows(rows, run), out.data(), in.data() + run);
    int64_t wrong = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < run; ++j) wrong += out[r * run + j] != in[(r * 3 + 1) * run + j];
    CHECK(wrong == 0);
  }
}

namespace {

// out[i] = a[i] op b[i] (or a copy of a) over n elements that move kStreamStoreBytes or more, with
// out starting `shift` elements past a 64-byte line (an ordinary head, then streamed lines): the
// bits of the op element by element, and the elements around out untouched. (Streamed where the CPU
// has AVX-512; elsewhere the ordinary loop is checked.)
template <class T, class Op>
void check_streamed(int64_t n, int64_t shift, bool copy) {
  INFO("n " << n << ", shift " << shift << (copy ? ", copy" : ", binary op"));
  std::vector<T> a(static_cast<size_t>(n)), b(a.size()), buffer(a.size() + 64, T(-7.0f));
  for (int64_t i = 0; i < n; ++i) {
    a[static_cast<size_t>(i)] = T(static_cast<float>(i % 1009) * 0.37f - 150.0f);
    b[static_cast<size_t>(i)] = T(static_cast<float>(i % 997) * -0.11f + 3.0f);
  }
  T* line = buffer.data() + (64 - reinterpret_cast<uintptr_t>(buffer.data()) % 64) % 64 / sizeof(T);
  T* out = line + shift;
  cpu::LoopShape s;
  s.ndim = 1;
  s.noperands = copy ? 2 : 3;
  s.sizes = {n};
  s.strides[0] = {1};
  s.strides[1] = {1};
  s.strides[2] = {1};
  if (copy) {
    cpu::copy_kernel(s, out, a.data());
  } else {
    cpu::binary_kernel<Op>(s, out, a.data(), b.data());
  }
  int64_t wrong = 0, touched = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T want = copy ? a[static_cast<size_t>(i)]
                        : T(Op::scalar(float(a[static_cast<size_t>(i)]), float(b[static_cast<size_t>(i)])));
    wrong += std::memcmp(&out[i], &want, sizeof want) != 0;
  }
  for (T* p = buffer.data(); p < buffer.data() + buffer.size(); ++p)
    if (p < out || p >= out + n) touched += float(*p) != -7.0f;
  CHECK(wrong == 0);
  CHECK(touched == 0);
}

}  // namespace

TEST_CASE("binary ops and copies whose outputs are streamed give the bits of the ordinary loop", "[pointwise]") {
  // float: 3 x 32 MiB moved by a binary op (and a copy of 48 MiB); bfloat16 the same bytes
  const int64_t f32 = cpu::kStreamStoreBytes / 3 / 4 + 5, f32_copy = cpu::kStreamStoreBytes / 2 / 4 + 5;
  const int64_t bf16 = cpu::kStreamStoreBytes / 3 / 2 + 7, bf16_copy = cpu::kStreamStoreBytes / 2 / 2 + 7;
  for (int64_t shift : {int64_t(0), int64_t(3)}) {
    check_streamed<float, cpu::AddOp>(f32, shift, false);
    check_streamed<float, cpu::MulOp>(f32, shift, false);
    check_streamed<float, cpu::AddOp>(f32_copy, shift, true);
    check_streamed<BFloat16, cpu::SubOp>(bf16, shift, false);
    check_streamed<BFloat16, cpu::DivOp>(bf16, shift, false);
    check_streamed<BFloat16, cpu::AddOp>(bf16_copy, shift, true);
  }
}

TEST_CASE("sqrt, rsqrt and neg on contiguous rows give the scalar form's bits: IEEE 754's, PyTorch's", "[pointwise]") {
  // Eigen 3.4's packet forms gave sqrt(inf) = NaN, sqrt(-0) = +0, -(+0) = +0 and roots an ulp
  // or so off; remat's array forms (kernels/cpu/eigen.h's IeeeSqrt, a product by -1) do not.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {inf, -0.0f, 0.0f, -1.0f, -inf, std::nanf(""), 1e-40f, 2.0f, 3.0f, 1e30f};
  for (int i = 0; x.size() < 200; ++i) x.push_back(0.37f * float(i) + 0.01f);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> sq(x.size()), rs(x.size()), ng(x.size());
  cpu::unary_kernel<cpu::SqrtOp, float>(contiguous_loop(n), sq.data(), x.data());
  cpu::unary_kernel<cpu::RsqrtOp, float>(contiguous_loop(n), rs.data(), x.data());
  cpu::unary_kernel<cpu::NegOp, float>(contiguous_loop(n), ng.data(), x.data());
  auto bits = [](float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return u;
  };
  int differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x[i] << ": sqrt " << sq[i] << ", rsqrt " << rs[i] << ", neg " << ng[i]);
    const bool nan = std::isnan(x[i]) || x[i] < 0;
    if (nan && x[i] != 0) {  // NaN or a negative number (not -0): NaN
      CHECK(std::isnan(sq[i]));
      CHECK(std::isnan(rs[i]));
    } else {
      differ += bits(sq[i]) != bits(std::sqrt(x[i]));
      differ += bits(rs[i]) != bits(1.0f / std::sqrt(x[i]));
    }
    if (!std::isnan(x[i])) differ += bits(ng[i]) != bits(-x[i]);
  }
  CHECK(differ == 0);
  CHECK(std::isinf(sq[0]));     // sqrt(inf) = inf
  CHECK(std::signbit(sq[1]));   // sqrt(-0) = -0
  CHECK(std::signbit(ng[2]));   // -(+0) = -0
  CHECK(!std::signbit(ng[1]));  // -(-0) = +0
  CHECK(rs[0] == 0.0f);         // rsqrt(inf) = 0
  CHECK(rs[1] == -inf);         // rsqrt(-0) = -inf
}

TEST_CASE("the sigmoid and silu on contiguous rows keep their relative precision where the sigmoid is small",
          "[pointwise]") {
  // Eigen's logistic, the array form before, is a rational function accurate in absolute terms:
  // 4.9e-4 from the value in relative terms near x = -9 (float). 1 / (1 + exp(-x)) keeps a few
  // ulp everywhere, as PyTorch's does.
  const int64_t n = 4096;
  std::vector<float> x(n), s(n), si(n);
  for (int64_t i = 0; i < n; ++i) x[i] = -30.0f + 60.0f * float(i) / float(n);
  cpu::unary_kernel<cpu::SigmoidOp, float>(contiguous_loop(n), s.data(), x.data());
  cpu::unary_kernel<cpu::SiluOp, float>(contiguous_loop(n), si.data(), x.data());
  double worst = 0, worst_silu = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double want = 1.0 / (1.0 + std::exp(-double(x[i])));
    worst = std::max(worst, std::abs(s[i] - want) / want);
    if (x[i] != 0) worst_silu = std::max(worst_silu, std::abs(si[i] - x[i] * want) / std::abs(x[i] * want));
  }
  INFO("worst relative error: sigmoid " << worst << ", silu " << worst_silu);
  CHECK(worst < 1e-6);
  CHECK(worst_silu < 1e-6);
}
