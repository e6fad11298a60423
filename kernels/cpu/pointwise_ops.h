// Mirrors ATen/native/cpu/PointwiseOpsKernel.cpp (addcmul, addcdiv), LerpKernel.cpp (lerp) and
// BinaryOpsKernel.cpp's maximum/minimum: the elementwise updates optimizers are made of.
//
// Each kernel walks a LoopShape whose operand 0 is the output; arithmetic runs in acc_t (float
// for 16-bit types), with the scalar rounded to the element type first, as ATen does.
#pragma once

#include <cmath>

#include "kernels/cpu/pointwise.h"

namespace remat::kernels::cpu {

// self[i] += value * t1[i] * t2[i]             (operands: out = self, self, t1, t2)
template <class T>
void addcmul_kernel(const LoopShape& s, T* out, const T* self, const T* t1, const T* t2, double value) {
  using A = acc_t<T>;
  const A v = static_cast<A>(static_cast<T>(value));
  ternary_map(s, out, self, t1, t2, [v](T x, T a, T b) { return T(A(x) + v * A(a) * A(b)); });
}

// self[i] += value * t1[i] / t2[i]
template <class T>
void addcdiv_kernel(const LoopShape& s, T* out, const T* self, const T* t1, const T* t2, double value) {
  using A = acc_t<T>;
  const A v = static_cast<A>(static_cast<T>(value));
  ternary_map(s, out, self, t1, t2, [v](T x, T a, T b) { return T(A(x) + v * (A(a) / A(b))); });
}

// self[i] = self[i] + weight * (end[i] - self[i]); for weight >= 0.5 ATen computes
// end - (end - self) * (1 - weight) instead, which is exact at weight = 1.
template <class T>
void lerp_kernel(const LoopShape& s, T* out, const T* self, const T* end, double weight) {
  using A = acc_t<T>;
  const A w = static_cast<A>(weight);
  binary_map(s, out, self, end, [w](T x, T e) {
    A a = A(x), b = A(e);
    A r = std::abs(w) < A(0.5) ? a + w * (b - a) : b - (b - a) * (A(1) - w);
    return T(r);
  });
}

// out[i] = max(a[i], b[i]) (or min); NaN in either input gives NaN, as torch.maximum does.
template <class T, bool kMax>
void extremum_kernel(const LoopShape& s, T* out, const T* a, const T* b) {
  using A = acc_t<T>;
  binary_map(s, out, a, b, [](T x, T y) {
    A p = A(x), q = A(y);
    if (p != p) return x;  // NaN (never true for integers and bool)
    if (q != q) return y;
    if constexpr (kMax) return p >= q ? x : y;
    else return p <= q ? x : y;
  });
}

}  // namespace remat::kernels::cpu
