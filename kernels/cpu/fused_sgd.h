// Mirrors ATen/native/cpu/FusedSGDKernel.cpp (_fused_sgd_ on CPU): one pass over a parameter,
// its gradient and its momentum buffer, instead of the up to seven elementwise ops (and their
// temporaries) of the single-tensor update. Arithmetic in float for bfloat16 parameters (the
// buffer is stored in the parameter's dtype, as PyTorch's fused kernel does; the
// hyperparameters stay float there, where PyTorch's vector loop rounds them to bf16 first).
//
// For float and double the result is bit-identical to the single-tensor update
// (nn/optim/sgd.cpp): each product and sum is rounded once to the element type, in the same
// order, with every hyperparameter rounded to it first, as the op sequence does. That needs the
// compiler not to contract a * b + c into one fused multiply-add (GCC does by default with FMA
// instructions, -march=native): the kernel is compiled with contraction off.
#pragma once

#include <cstdint>
#include <type_traits>

#include "engine/core/bfloat16.h"
#include "kernels/cpu/bfloat16_blocks.h"
#include "kernels/cpu/bfloat16_convert.h"
#include "kernels/cpu/parallel.h"
#include "kernels/sgd_step.h"

namespace remat::kernels::cpu {

using kernels::SGDStep;  // kernels/sgd_step.h

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

namespace detail {
// The hyperparameters in A, each rounded once as the op sequence rounds it.
template <class A>
struct SGDConsts {
  A sign, wd, mom, damp, neg_lr;
  explicit SGDConsts(const SGDStep& s)
      : sign(s.maximize ? A(-1) : A(1)), wd(A(s.weight_decay)), mom(A(s.momentum)), damp(A(1.0 - s.dampening)),
        neg_lr(A(-s.lr)) {}
};

// The update of n contiguous elements in A (float or double). The options are template
// arguments: a branch on them inside the loop would keep it from vectorizing (GCC does not
// speculate floating-point arithmetic under -ftrapping-math).
//   d = maximize ? -g : g;  d = d + p * weight_decay
//   buf = first ? d : buf * momentum + d * (1 - dampening);  d = nesterov ? d + buf * momentum : buf
//   p = p + d * -lr
template <class A, bool kDecay, bool kMomentum, bool kFirst, bool kNesterov>
void sgd_loop(A* p, const A* g, A* buf, int64_t n, const SGDConsts<A>& c) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  const SGDConsts<A> k = c;  // locals: no aliasing with p
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    A d = g[i] * k.sign;
    if constexpr (kDecay) d = d + p[i] * k.wd;
    if constexpr (kMomentum) {
      A b = d;
      if constexpr (!kFirst) b = buf[i] * k.mom + d * k.damp;  // d * 1 is d exactly: dampening 0 needs no branch
      buf[i] = b;
      d = kNesterov ? d + b * k.mom : b;
    }
    p[i] = p[i] + d * k.neg_lr;
  }
}

template <class A, bool kDecay>
void sgd_run_decay(A* p, const A* g, A* buf, int64_t n, const SGDStep& s, const SGDConsts<A>& c) {
  if (buf == nullptr) return sgd_loop<A, kDecay, false, false, false>(p, g, buf, n, c);
  if (s.is_first_step) {
    if (s.nesterov) return sgd_loop<A, kDecay, true, true, true>(p, g, buf, n, c);
    return sgd_loop<A, kDecay, true, true, false>(p, g, buf, n, c);
  }
  if (s.nesterov) return sgd_loop<A, kDecay, true, false, true>(p, g, buf, n, c);
  sgd_loop<A, kDecay, true, false, false>(p, g, buf, n, c);
}

// buf is null without momentum.
template <class A>
void sgd_run(A* p, const A* g, A* buf, int64_t n, const SGDStep& s) {
  const SGDConsts<A> c(s);
  if (s.weight_decay != 0) return sgd_run_decay<A, true>(p, g, buf, n, s, c);
  sgd_run_decay<A, false>(p, g, buf, n, s, c);
}
}  // namespace detail

// p and buf updated in place from g; all contiguous, n elements, one dtype T (float, double or
// BFloat16); buf null when momentum is 0.
template <class T>
void fused_sgd(T* p, const T* g, T* buf, int64_t n, const SGDStep& s) {
  if constexpr (std::is_same_v<T, BFloat16>) {
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
      alignas(64) float pf[kFloatBlock], gf[kFloatBlock], bf[kFloatBlock];
      for (int64_t lo = b; lo < e; lo += kFloatBlock) {
        const int64_t len = e - lo < kFloatBlock ? e - lo : kFloatBlock;
        bf16_to_float(p + lo, pf, len);
        bf16_to_float(g + lo, gf, len);
        if (buf != nullptr && !s.is_first_step) bf16_to_float(buf + lo, bf, len);
        detail::sgd_run<float>(pf, gf, buf != nullptr ? bf : nullptr, len, s);
        float_to_bf16(pf, p + lo, len);
        if (buf != nullptr) float_to_bf16(bf, buf + lo, len);
      }
    });
  } else {
    parallel_for(0, n, kGrainSize, [&](int64_t b, int64_t e) {
      detail::sgd_run<T>(p + b, g + b, buf != nullptr ? buf + b : nullptr, e - b, s);
    });
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

}  // namespace remat::kernels::cpu
