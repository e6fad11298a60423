// Mirrors ATen/cpu/vec/functional_base.h (vec::reduce_all, vec::map_reduce_all): reductions over
// one contiguous row, vectorized for float and double (Eigen packets); bfloat16 rows are widened
// a block at a time (kFloatBlock floats, in L1) and each block reduced by the float code, the
// blocks combined in order (as functional_bfloat16.h's map_reduce_all); in acc_t order otherwise.
//
// Why: a plain `for (k) sum += x[k]` cannot be vectorized by the compiler (reassociating a float
// sum changes its rounding), so row kernels written that way run one element per cycle. Eigen
// sums in a fixed packet-then-tree order: still deterministic run to run, for a given length.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cpu/eigen.h"
#include "kernels/cpu/pointwise.h"

namespace remat::kernels::cpu::rows {

template <class T>
using Row = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

// combine(acc, block(float_row, len)) over the widened blocks of the bfloat16 rows x (and y).
template <class Block, class Combine>
float over_float_blocks(const BFloat16* x, const BFloat16* y, int64_t n, float acc, const Block& block,
                        const Combine& combine) {
  alignas(64) float xf[kFloatBlock], yf[kFloatBlock];
  for (int64_t lo = 0; lo < n; lo += kFloatBlock) {
    const int64_t len = std::min(n - lo, kFloatBlock);
    bf16_to_float(x + lo, xf, len);
    if (y != nullptr) bf16_to_float(y + lo, yf, len);
    acc = combine(acc, block(Row<float>(xf, len), Row<float>(yf, y != nullptr ? len : 0)));
  }
  return acc;
}
inline float plus(float a, float b) { return a + b; }

// max_k x[k]  (-inf for an empty row)
template <class T, class A = acc_t<T>>
A max(const T* x, int64_t n) {
  if (n == 0) return -std::numeric_limits<A>::infinity();
  if constexpr (kEigenVectorizable<T>) {
    return Row<T>(x, n).maxCoeff();
  } else if constexpr (kFloatBlocks<T>) {
    return over_float_blocks(
        x, nullptr, n, -std::numeric_limits<float>::infinity(), [](const auto& r, const auto&) { return r.maxCoeff(); },
        [](float a, float b) { return std::max(a, b); });
  } else {
    A m = -std::numeric_limits<A>::infinity();
    for (int64_t k = 0; k < n; ++k) m = std::max(m, A(x[k]));
    return m;
  }
}

// sum_k x[k]
template <class T, class A = acc_t<T>>
A sum(const T* x, int64_t n) {
  if constexpr (kEigenVectorizable<T>) {
    return n == 0 ? A(0) : Row<T>(x, n).sum();
  } else if constexpr (kFloatBlocks<T>) {
    return over_float_blocks(x, nullptr, n, 0.0f, [](const auto& r, const auto&) { return r.sum(); }, plus);
  } else {
    A s = 0;
    for (int64_t k = 0; k < n; ++k) s += A(x[k]);
    return s;
  }
}

// sum_k x[k] * y[k]
template <class T, class A = acc_t<T>>
A dot(const T* x, const T* y, int64_t n) {
  if constexpr (kEigenVectorizable<T>) {
    return n == 0 ? A(0) : (Row<T>(x, n) * Row<T>(y, n)).sum();
  } else if constexpr (kFloatBlocks<T>) {
    return over_float_blocks(x, y, n, 0.0f, [](const auto& a, const auto& b) { return (a * b).sum(); }, plus);
  } else {
    A s = 0;
    for (int64_t k = 0; k < n; ++k) s += A(x[k]) * A(y[k]);
    return s;
  }
}

// sum_k exp(x[k] - shift)
template <class T, class A = acc_t<T>>
A sum_exp(const T* x, int64_t n, A shift) {
  if constexpr (kEigenVectorizable<T>) {
    return n == 0 ? A(0) : kernel_exp(Row<T>(x, n) - shift).sum();
  } else if constexpr (kFloatBlocks<T>) {
    return over_float_blocks(x, nullptr, n, 0.0f, [&](const auto& r, const auto&) { return (r - shift).exp().sum(); },
                             plus);
  } else {
    A s = 0;
    for (int64_t k = 0; k < n; ++k) s += std::exp(A(x[k]) - shift);
    return s;
  }
}

// sum_k (x[k] - mean)^2
template <class T, class A = acc_t<T>>
A sum_sq_dev(const T* x, int64_t n, A mean) {
  if constexpr (kEigenVectorizable<T>) {
    return n == 0 ? A(0) : (Row<T>(x, n) - mean).square().sum();
  } else if constexpr (kFloatBlocks<T>) {
    return over_float_blocks(x, nullptr, n, 0.0f, [&](const auto& r, const auto&) { return (r - mean).square().sum(); },
                             plus);
  } else {
    A s = 0;
    for (int64_t k = 0; k < n; ++k) s += (A(x[k]) - mean) * (A(x[k]) - mean);
    return s;
  }
}

}  // namespace remat::kernels::cpu::rows
