// Mirrors torchgen's generated NativeMetaFunctions.h for LinearAlgebra.cpp's structured ops
// (at::meta::structured_mm, structured_bmm, structured_addmm): the Defs (ops/structured.h) of the
// matrix products, so that each op's name, schema and meta function exist once. Their kernels
// (ops/linalg.cpp, ops/cuda/linalg.cpp) make their operand copies by ops/gemm_copies.h, which
// the Meta kernels read too. matmul and linear are composites (ops/linalg.cpp).
#pragma once

#include "ops/gemm_copies.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

struct structured_mm {
  using Sig = Tensor(const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::mm";
  static constexpr const char* schema = "(Tensor self, Tensor mat2) -> Tensor";
  static constexpr auto meta = &mm_meta;
};
struct structured_bmm {
  using Sig = Tensor(const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::bmm";
  static constexpr const char* schema = "(Tensor self, Tensor mat2) -> Tensor";
  static constexpr auto meta = &bmm_meta;
};
struct structured_addmm {
  using Sig = Tensor(const Tensor&, const Tensor&, const Tensor&);
  static constexpr const char* name = "aten::addmm";
  static constexpr const char* schema = "(Tensor self, Tensor mat1, Tensor mat2) -> Tensor";
  static constexpr auto meta = &addmm_meta;
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
