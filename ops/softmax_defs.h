// Mirrors torchgen's generated NativeMetaFunctions.h for SoftMax.cpp's structured ops
// (at::meta::structured_softmax, ...): the Defs (ops/structured.h) of softmax, log_softmax and
// their backward kernels, so that each op's name, schema and meta function exist once.
#pragma once

#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

struct structured_softmax {
  using Sig = Tensor(const Tensor&, int64_t);
  static constexpr const char* name = "aten::softmax";
  static constexpr const char* schema = "(Tensor self, int dim) -> Tensor";
  static constexpr auto meta = &softmax_meta;
};
struct structured_log_softmax {
  using Sig = Tensor(const Tensor&, int64_t);
  static constexpr const char* name = "aten::log_softmax";
  static constexpr const char* schema = "(Tensor self, int dim) -> Tensor";
  static constexpr auto meta = &softmax_meta;
};
struct structured__softmax_backward_data {
  using Sig = Tensor(const Tensor&, const Tensor&, int64_t);
  static constexpr const char* name = "aten::_softmax_backward_data";
  static constexpr const char* schema = "(Tensor grad_output, Tensor output, int dim) -> Tensor";
  static constexpr auto meta = &softmax_backward_meta;
};
struct structured__log_softmax_backward_data {
  using Sig = Tensor(const Tensor&, const Tensor&, int64_t);
  static constexpr const char* name = "aten::_log_softmax_backward_data";
  static constexpr const char* schema = "(Tensor grad_output, Tensor output, int dim) -> Tensor";
  static constexpr auto meta = &softmax_backward_meta;
};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_softmax_def(const F& f) {
  f(structured::DefTag<structured_softmax>{});
  f(structured::DefTag<structured_log_softmax>{});
  f(structured::DefTag<structured__softmax_backward_data>{});
  f(structured::DefTag<structured__log_softmax_backward_data>{});
}

}  // namespace remat::ops
