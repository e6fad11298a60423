// Mirrors torchgen's generated NativeMetaFunctions.h for ReduceOps.cpp's structured ops
// (at::meta::structured_sum_dim_IntList, structured_mean_dim, structured_amax): the Defs
// (ops/structured.h) of the reductions, so that each op's name, schema and meta function exist
// once. Their kernels are ops/reduction.cpp's and ops/cuda/reduction.cpp's; their temporaries are
// templates both the kernels and the Meta kernels run (ops/meta_copies.h). sum_to_size is a
// composite (ops/reduction.cpp).
#pragma once

#include <optional>

#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

struct structured_sum {
  using Sig = Tensor(const Tensor&, const std::optional<Shape>&, bool);
  static constexpr const char* name = "aten::sum";
  static constexpr const char* schema = "(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor";
  static constexpr auto meta = &sum_meta;
};
struct structured_mean {
  using Sig = Tensor(const Tensor&, const std::optional<Shape>&, bool);
  static constexpr const char* name = "aten::mean";
  static constexpr const char* schema = "(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor";
  static constexpr auto meta = &mean_meta;
};
struct structured_amax {
  using Sig = Tensor(const Tensor&, int64_t, bool);
  static constexpr const char* name = "aten::amax";
  static constexpr const char* schema = "(Tensor self, int dim, bool keepdim=False) -> Tensor";
  static constexpr auto meta = &amax_meta;
};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_reduction_def(const F& f) {
  f(structured::DefTag<structured_sum>{});
  f(structured::DefTag<structured_mean>{});
  f(structured::DefTag<structured_amax>{});
}

}  // namespace remat::ops
