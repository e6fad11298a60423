// Mirrors torchgen's generated NativeMetaFunctions.h for SoftMax.cpp's structured ops
// (at::meta::structured_softmax, ...): the Defs (ops/structured.h) of softmax, log_softmax,
// _masked_softmax and their backward kernels, so that each op's name, schema and meta function exist once.
#pragma once

#include <optional>

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

// PyTorch's _masked_softmax (mask: true where a score is masked out; a row masked throughout is
// zeros) and its backward, as native_functions.yaml declares them; derivatives.yaml gives
// _masked_softmax's gradient as _masked_softmax_backward(grad, result, mask, dim).
struct structured__masked_softmax {
  using Sig = Tensor(const Tensor&, const Tensor&, std::optional<int64_t>, std::optional<int64_t>);
  static constexpr const char* name = "aten::_masked_softmax";
  static constexpr const char* schema = "(Tensor self, Tensor mask, int? dim=None, int? mask_type=None) -> Tensor";
  static constexpr auto meta = &masked_softmax_meta;
};
struct structured__masked_softmax_backward {
  using Sig = Tensor(const Tensor&, const Tensor&, const Tensor&, std::optional<int64_t>);
  static constexpr const char* name = "aten::_masked_softmax_backward";
  static constexpr const char* schema = "(Tensor grad_output, Tensor output, Tensor mask, int? dim=None) -> Tensor";
  static constexpr auto meta = &masked_softmax_backward_meta;
};

// What the _masked_softmax kernels read besides their outputs, in the order they are made: every
// operand contiguous (a copy only of a strided one; Copies: CPUCopies, CUDACopies, or MetaCopies
// for a dry run, which so allocates what the kernels allocate). Freed in the reverse order.
struct MaskedSoftmaxTemporaries {
  Tensor x, mask;
};
template <class Copies>
MaskedSoftmaxTemporaries masked_softmax_temporaries(const Tensor&, const Tensor& self, const Tensor& mask,
                                                    std::optional<int64_t>, std::optional<int64_t>) {
  MaskedSoftmaxTemporaries r;
  r.x = Copies::contiguous(self);
  r.mask = Copies::contiguous(mask);
  return r;
}
struct MaskedSoftmaxBackwardTemporaries {
  Tensor dy, y, mask;
};
template <class Copies>
MaskedSoftmaxBackwardTemporaries masked_softmax_backward_temporaries(const Tensor&, const Tensor& grad_output,
                                                                     const Tensor& output, const Tensor& mask,
                                                                     std::optional<int64_t>) {
  MaskedSoftmaxBackwardTemporaries r;
  r.dy = Copies::contiguous(grad_output);
  r.y = Copies::contiguous(output);
  r.mask = Copies::contiguous(mask);
  return r;
}

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_softmax_def(const F& f) {
  f(structured::DefTag<structured_softmax>{});
  f(structured::DefTag<structured_log_softmax>{});
  f(structured::DefTag<structured__softmax_backward_data>{});
  f(structured::DefTag<structured__log_softmax_backward_data>{});
  f(structured::DefTag<structured__masked_softmax>{});
  f(structured::DefTag<structured__masked_softmax_backward>{});
}

}  // namespace remat::ops
