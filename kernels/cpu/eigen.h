// Eigen as remat includes it (no PyTorch counterpart: ATen's CPU kernels vectorize with their
// own ATen/cpu/vec). Every remat file that uses Eigen includes it through here, never
// <Eigen/...> directly.
//
// The intrinsics come first, through kernels/cpu/x86_intrinsics.h, which keeps GCC 12's false
// "'__Y' may be used uninitialized" reports from the AVX-512 intrinsics' code out of the build
// (hundreds of them come through Eigen's packet math). The same two warnings are off in Eigen's
// own headers too, should a file have included <immintrin.h> before this; remat's code keeps them.
//
// Where Eigen 3.4's packet math parts from IEEE 754 and from PyTorch, remat's expressions go
// around it: IeeeSqrt, FullRangeLog and FullRangeExp below for sqrt, log and exp; negation as a
// product by -1 (pnegate is 0 - x, which gives +0 for +0); the sigmoid as 1 / (1 + exp(-x))
// (kernels/cpu/pointwise.h).
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/x86_intrinsics.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <Eigen/Core>                          // IWYU pragma: export
#include <unsupported/Eigen/SpecialFunctions>  // IWYU pragma: export
#pragma GCC diagnostic pop

namespace remat::kernels::cpu {

// x.unaryExpr(IeeeSqrt()): sqrt as IEEE 754 and PyTorch give it (the instruction, vsqrtps and
// vsqrtpd: the root correctly rounded). Eigen 3.4's packet sqrt under EIGEN_FAST_MATH (its
// default) is an rsqrt estimate and a Newton step on AVX-512: sqrt(inf) came out NaN, sqrt(-0)
// +0, and other values an ulp or so from the rounded root (the strided loop's std::sqrt, PyTorch's).
struct IeeeSqrt {
  template <class T>
  T operator()(const T& v) const { return std::sqrt(v); }
#if defined(__SSE2__)
  __m128 packetOp(const __m128& p) const { return _mm_sqrt_ps(p); }
  __m128d packetOp(const __m128d& p) const { return _mm_sqrt_pd(p); }
#endif
#if defined(__AVX__)
  __m256 packetOp(const __m256& p) const { return _mm256_sqrt_ps(p); }
  __m256d packetOp(const __m256d& p) const { return _mm256_sqrt_pd(p); }
#endif
#if defined(__AVX512F__)
  __m512 packetOp(const __m512& p) const { return _mm512_sqrt_ps(p); }
  __m512d packetOp(const __m512d& p) const { return _mm512_sqrt_pd(p); }
#endif
};

// x.unaryExpr(FullRangeLog()): the log of every positive value, subnormals too, as std::log and
// PyTorch give it. Eigen 3.4's packet log takes a subnormal x for the smallest normal number:
// log(1e-40f) came out -87.34, not -92.10 (log(1e-45f): -87.34 for -103.28). A subnormal x is
// scaled by 2^digits into the normal range first and its log shifted back by digits ln 2.
struct FullRangeLog {
  template <class T>
  T operator()(const T& v) const { return std::log(v); }
  template <class P>
  P packetOp(const P& p) const {
    using namespace Eigen::internal;
    using S = typename unpacket_traits<P>::type;
    constexpr int kDigits = std::numeric_limits<S>::digits;  // 24 (float), 53 (double)
    const P subnormal = pcmp_lt(p, pset1<P>(std::numeric_limits<S>::min()));  // and zero, negatives: unchanged
    const P scaled = pmul(p, pselect(subnormal, pset1<P>(S(std::ldexp(1.0, kDigits))), pset1<P>(S(1))));
    return psub(plog(scaled), pand(subnormal, pset1<P>(S(kDigits * 0.69314718055994530942))));
  }
};

// x.unaryExpr(FullRangeExp()): exp over the whole range of results, subnormal ones too, as std::exp
// and PyTorch give it. Eigen 3.4's packet exp gives 0 below x = -87.3 (float) where the result is
// subnormal, and inf from x = 88.38 on though the largest float is exp(88.72). Beyond |x| =
// -log(smallest normal) it is taken as exp(x / 2) squared: x / 2 is exact, exp(x / 2) is in range,
// and the square rounds once (into the subnormals, or to inf past the largest value).
struct FullRangeExp {
  template <class T>
  T operator()(const T& v) const { return std::exp(v); }
  template <class P>
  P packetOp(const P& p) const {
    using namespace Eigen::internal;
    using S = typename unpacket_traits<P>::type;
    const P far = pcmp_lt(pset1<P>(-S(std::log(std::numeric_limits<S>::min()))), pabs(p));  // 87.3, 708.4
    const P e = pexp(pselect(far, pmul(p, pset1<P>(S(0.5))), p));
    return pselect(far, pmul(e, e), e);
  }
};

// exp of an Eigen array expression, for the kernels: Eigen's own in float (0 below e^-87.3, as
// exp16 gives it: subnormal results would cost microcode assists, and a masked entry's exp(-inf)
// is 0), FullRangeExp in double, where Eigen's gives 5.6e-309 for exp(-inf): a masked entry of a
// double softmax came out 5.6e-309 / sum, not PyTorch's 0.
template <class Derived>
auto kernel_exp(const Eigen::ArrayBase<Derived>& x) {
  if constexpr (std::is_same_v<typename Derived::Scalar, double>) {
    return x.unaryExpr(FullRangeExp());
  } else {
    return x.exp();
  }
}

}  // namespace remat::kernels::cpu

namespace Eigen::internal {
template <>
struct functor_traits<remat::kernels::cpu::IeeeSqrt> {
  enum { Cost = 5 * NumTraits<float>::MulCost, PacketAccess = 1 };
};
template <>
struct functor_traits<remat::kernels::cpu::FullRangeExp> {
  enum { Cost = functor_traits<scalar_exp_op<float>>::Cost + 4, PacketAccess = 1 };
};
template <>
struct functor_traits<remat::kernels::cpu::FullRangeLog> {
  enum { Cost = functor_traits<scalar_log_op<float>>::Cost + 4, PacketAccess = 1 };
};
}  // namespace Eigen::internal
