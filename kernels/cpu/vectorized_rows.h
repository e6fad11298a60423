// Mirrors ATen/cpu/vec/functional_base.h (vec::reduce_all, vec::map_reduce_all): reductions over
// one contiguous row, vectorized for float and double (Eigen packets), in acc_t order otherwise.
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

// max_k x[k]  (-inf for an empty row)
template <class T, class A = acc_t<T>>
A max(const T* x, int64_t n) {
  if (n == 0) return -std::numeric_limits<A>::infinity();
  if constexpr (kEigenVectorizable<T>) {
    return Row<T>(x, n).maxCoeff();
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
    return n == 0 ? A(0) : (Row<T>(x, n) - shift).exp().sum();
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
  } else {
    A s = 0;
    for (int64_t k = 0; k < n; ++k) s += (A(x[k]) - mean) * (A(x[k]) - mean);
    return s;
  }
}

}  // namespace remat::kernels::cpu::rows
