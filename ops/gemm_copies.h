// The GEMM operand copies of each backend (no PyTorch counterpart: ATen's mm copies an operand
// inside its kernels, and FakeTensorMode does not count the copy): each backend declares once,
// in one function, which operands its GEMM copies and in what order; its kernel and the Meta
// kernel both make the copies through make_gemm_copies, the kernel with the backend's contiguous
// copy, the Meta kernel with an empty Meta tensor of the copy's geometry. So a dry run allocates
// what the backend allocates by construction.
//
//   void batched_gemm(const Tensor& out, const Tensor& a, const Tensor& b, ...) {  // ops/linalg.cpp
//     const GemmOperands g = make_gemm_copies(cpu_gemm_copies(out, a, b), a, b, contiguous_cpu);
//     ...                                                        // g.a and g.b are readable
//   }
#pragma once

#include <array>
#include <cstdint>

#include "engine/core/tensor.h"

namespace remat::ops {

// The copies one GEMM makes, in order: each replaces operand a (or b) by a contiguous copy.
struct GemmCopyPlan {
  enum Operand : uint8_t { kA, kB };
  std::array<Operand, 4> steps{};
  int size = 0;
  void add(Operand o) { steps[static_cast<size_t>(size++)] = o; }
};

// out = a @ b (batched: [batch..., m, k] @ [batch..., k, n]). No copy when no GEMM runs (an
// empty output, or k = 0).
// CPU: a, then b, when it is neither row- nor column-major (e.g. expanded): gemm_operand's rule.
GemmCopyPlan cpu_gemm_copies(const Tensor& out, const Tensor& a, const Tensor& b);
// CUDA: the copies of cuda_temporaries::gemm_copies, in its order (layout a, b; then batch a, b).
GemmCopyPlan cuda_gemm_copies(const Tensor& out, const Tensor& a, const Tensor& b);

// The operands a GEMM reads: its inputs, or their copies. Its copies are freed when it goes, b's
// first, then a's, on every backend.
struct GemmOperands {
  Tensor a, b;
};

// Makes the plan's copies: each step sets its operand to copy(operand).
template <class Copy>
GemmOperands make_gemm_copies(const GemmCopyPlan& plan, const Tensor& a, const Tensor& b, const Copy& copy) {
  GemmOperands g{a, b};
  for (int i = 0; i < plan.size; ++i) {
    Tensor& t = plan.steps[static_cast<size_t>(i)] == GemmCopyPlan::kA ? g.a : g.b;
    t = copy(t);
  }
  return g;
}

// The Meta kernels' temporaries (structured::impl_meta): the copies of the backend the dry run
// counts like (cuda_temporaries::imitating(): CUDA's, else the CPU's), made and freed.
void meta_gemm_copies(const Tensor& out, const Tensor& a, const Tensor& b);

}  // namespace remat::ops
