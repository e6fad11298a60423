// Mirrors torchgen's generated NativeMetaFunctions.h for ReduceOps.cpp's structured ops
// (at::meta::structured_sum_dim_IntList, structured_mean_dim, structured_amax): the Defs
// (ops/structured.h) of the reductions, so that each op's name, schema and meta function exist
// once. Their kernels are ops/reduction.cpp's and ops/cuda/reduction.cpp's; their temporaries are
// templates both the kernels and the Meta kernels run (ops/meta_copies.h). sum_to_size is a
// composite (ops/reduction.cpp).
#pragma once

#include <optional>

#include "ops/autograd/derivative_rules.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

struct structured_sum {
  using Sig = Tensor(const Tensor&, const std::optional<Shape>&, bool);
  static constexpr const char* name = "aten::sum";
  static constexpr const char* schema = "(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor";
  static constexpr auto meta = &sum_meta;
  // out = sum(self, dim, keepdim)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G {
      const Shape& in = c.meta(0).shape;
      return {expand(unsqueeze_reduced(c.grad(), in, c.ints(1), c.flag(2)), in)};
    });
  }
};
struct structured_mean {
  using Sig = Tensor(const Tensor&, const std::optional<Shape>&, bool);
  static constexpr const char* name = "aten::mean";
  static constexpr const char* schema = "(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor";
  static constexpr auto meta = &mean_meta;
  // out = mean(self, dim, keepdim)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G {
      const Shape& in = c.meta(0).shape;
      Shape dims = c.ints(1);
      int64_t n = 1;
      if (dims.empty() || in.empty()) {  // all elements (a 0-d input has one)
        n = shape_numel(in);
      } else {
        for (int64_t d : dims) n *= in[d < 0 ? d + static_cast<int64_t>(in.size()) : d];
      }
      Tensor g = unsqueeze_reduced(c.grad(), in, dims, c.flag(2));
      return {div(expand(g, in), static_cast<double>(n))};
    });
  }
};
struct structured_amax {
  using Sig = Tensor(const Tensor&, int64_t, bool);
  static constexpr const char* name = "aten::amax";
  static constexpr const char* schema = "(Tensor self, int dim, bool keepdim=False) -> Tensor";
  static constexpr auto meta = &amax_meta;
  // out = amax(self, dim, keepdim): the gradient is shared evenly by the maxima
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({arg(0, {0}), result(0, {0})}, [](C c) -> G {
      Tensor x = c.input(0);
      const Shape& in = c.meta(0).shape;
      Shape dims{c.integer(1)};
      bool keepdim = c.flag(2);
      Tensor y = unsqueeze_reduced(c.result(), in, dims, keepdim);
      Tensor g = unsqueeze_reduced(c.grad(), in, dims, keepdim);
      Tensor is_max = eq(x, y).to(x.dtype());
      Tensor count = sum(is_max, dims, true);
      return {mul(div(g, count), is_max)};
    });
  }
};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_reduction_def(const F& f) {
  f(structured::DefTag<structured_sum>{});
  f(structured::DefTag<structured_mean>{});
  f(structured::DefTag<structured_amax>{});
}

}  // namespace remat::ops
