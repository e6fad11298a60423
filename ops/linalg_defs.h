// Mirrors torchgen's generated NativeMetaFunctions.h for LinearAlgebra.cpp's structured ops
// (at::meta::structured_mm, structured_bmm, structured_addmm): the Defs (ops/structured.h) of the
// matrix products, so that each op's name, schema and meta function exist once. Their kernels
// (ops/linalg.cpp, ops/cuda/linalg.cpp) make their operand copies by ops/gemm_copies.h, which
// the Meta kernels read too. matmul and linear are composites (ops/linalg.cpp).
#pragma once

#include "ops/gemm_copies.h"
#include "ops/autocast.h"
#include "ops/autograd/derivative_rules.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

struct structured_mm {
  using Sig = Tensor(const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::mm";
  static constexpr const char* schema = "(Tensor self, Tensor mat2) -> Tensor";
  static constexpr auto meta = &mm_meta;
  static constexpr CastPolicy autocast_policy = CastPolicy::LowerPrecision;  // autocast: lower_precision_fp
  // out = self @ mat2 (mat2's geometry: its gradient takes mat2's layout)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return with_geometry_of(rule({arg(0, {1}), arg(1, {0})}, [](C c) -> G {
      return {if_needed(c, 0, [&] { return mm(c.grad(), transpose(c.input(1), 0, 1)); }),
              if_needed(c, 1, [&] { return mm_mat2_backward(c.grad(), c.input(0), c.geometry(1)); })};
    }), {1});
  }
};
struct structured_bmm {
  using Sig = Tensor(const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::bmm";
  static constexpr const char* schema = "(Tensor self, Tensor mat2) -> Tensor";
  static constexpr auto meta = &bmm_meta;
  static constexpr CastPolicy autocast_policy = CastPolicy::LowerPrecision;  // autocast: lower_precision_fp
  // out[b...] = self[b...] @ mat2[b...] (up to four batch dims)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({arg(0, {1}), arg(1, {0})}, [](C c) -> G {
      return {if_needed(c, 0, [&] { return bmm(c.grad(), transpose(c.input(1), -2, -1)); }),
              if_needed(c, 1, [&] { return bmm(transpose(c.input(0), -2, -1), c.grad()); })};
    });
  }
};
struct structured_addmm {
  using Sig = Tensor(const Tensor&, const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::addmm";
  static constexpr const char* schema = "(Tensor self, Tensor mat1, Tensor mat2) -> Tensor";
  static constexpr auto meta = &addmm_meta;
  static constexpr CastPolicy autocast_policy = CastPolicy::LowerPrecision;  // autocast: lower_precision_fp
  // out = self + mat1 @ mat2
  static autograd::Derivative derivative() {
    using namespace autograd;
    return with_geometry_of(rule({arg(1, {2}), arg(2, {1})}, [](C c) -> G {
      return {if_needed(c, 0, [&] { return sum_to(c.grad(), c.meta(0)); }),
              if_needed(c, 1, [&] { return mm(c.grad(), transpose(c.input(2), 0, 1)); }),
              if_needed(c, 2, [&] { return mm_mat2_backward(c.grad(), c.input(1), c.geometry(2)); })};
    }), {2});
  }
};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_linalg_def(const F& f) {
  f(structured::DefTag<structured_mm>{});
  f(structured::DefTag<structured_bmm>{});
  f(structured::DefTag<structured_addmm>{});
}

// The Meta kernels' temporaries of each (structured::impl_meta): the GEMM's operand copies.
inline void addmm_meta_copies(const Tensor& out, const Tensor&, const Tensor& a, const Tensor& b) {
  meta_gemm_copies(out, a, b);
}

}  // namespace remat::ops
