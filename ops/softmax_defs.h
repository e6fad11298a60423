// Mirrors torchgen's generated NativeMetaFunctions.h for SoftMax.cpp's structured ops
// (at::meta::structured_softmax, ...): the Defs (ops/structured.h) of softmax, log_softmax,
// _masked_softmax and their backward kernels, so that each op's name, schema and meta function exist once.
#pragma once

#include <optional>

#include "ops/autocast.h"
#include "ops/autograd/derivative_rules.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

struct structured_softmax {
  using Sig = Tensor(const Tensor&, int64_t);
  static constexpr const char* name = "aten::_softmax";  // softmax.int decomposes to it in PyTorch: what a dispatch mode sees
  static constexpr const char* schema = "(Tensor self, int dim) -> Tensor";
  static constexpr auto meta = &softmax_meta;
  static constexpr CastPolicy autocast_policy = CastPolicy::Float32;  // autocast: fp32
  // out = softmax(self, dim)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({result(0, {0})}, [](C c) -> G { return {_softmax_backward_data(c.grad(), c.result(), c.integer(1))}; });
  }
};
struct structured_log_softmax {
  using Sig = Tensor(const Tensor&, int64_t);
  static constexpr const char* name = "aten::_log_softmax";  // likewise log_softmax.int
  static constexpr const char* schema = "(Tensor self, int dim) -> Tensor";
  static constexpr auto meta = &softmax_meta;
  static constexpr CastPolicy autocast_policy = CastPolicy::Float32;  // autocast: fp32
  // out = log_softmax(self, dim)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({result(0, {0})}, [](C c) -> G {
      return {_log_softmax_backward_data(c.grad(), c.result(), c.integer(1))};
    });
  }
};
struct structured__softmax_backward_data {
  using Sig = Tensor(const Tensor&, const Tensor&, int64_t);
  static constexpr const char* name = "aten::_softmax_backward_data";
  static constexpr const char* schema = "(Tensor grad_output, Tensor output, int dim) -> Tensor";
  static constexpr auto meta = &softmax_backward_meta;
  // out = y * (g - sum(g * y, dim))          (g = grad_output, y = softmax output)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
      Tensor gg = c.grad();
      Shape dim{c.integer(2)};
      return {if_needed(c, 0, [&] { return _softmax_backward_data(gg, c.input(1), dim[0]); }),
              if_needed(c, 1, [&] {
                // d/dy: gg * (g - sum(g * y)) - g * sum(gg * y)
                Tensor g = c.input(0), y = c.input(1);
                return sub(mul(gg, sub(g, sum(mul(g, y), dim, true))), mul(g, sum(mul(gg, y), dim, true)));
              })};
    });
  }
};
struct structured__log_softmax_backward_data {
  using Sig = Tensor(const Tensor&, const Tensor&, int64_t);
  static constexpr const char* name = "aten::_log_softmax_backward_data";
  static constexpr const char* schema = "(Tensor grad_output, Tensor output, int dim) -> Tensor";
  static constexpr auto meta = &softmax_backward_meta;
  // out = g - exp(y) * sum(g, dim)            (g = grad_output, y = log_softmax output)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
      Tensor gg = c.grad();
      Shape dim{c.integer(2)};
      return {if_needed(c, 0, [&] { return sub(gg, sum(mul(gg, exp(c.input(1))), dim, true)); }),
              if_needed(c, 1, [&] { return neg(mul(mul(gg, exp(c.input(1))), sum(c.input(0), dim, true))); })};
    });
  }
};

// PyTorch's _masked_softmax (mask: true where a score is masked out; a row masked throughout is
// zeros) and its backward, as native_functions.yaml declares them; derivatives.yaml gives
// _masked_softmax's gradient as _masked_softmax_backward(grad, result, mask, dim).
struct structured__masked_softmax {
  using Sig = Tensor(const Tensor&, const Tensor&, std::optional<int64_t>, std::optional<int64_t>);
  static constexpr const char* name = "aten::_masked_softmax";
  static constexpr const char* schema = "(Tensor self, Tensor mask, int? dim=None, int? mask_type=None) -> Tensor";
  static constexpr auto meta = &masked_softmax_meta;
  // out = _masked_softmax(self, mask, dim, mask_type): softmax over the unmasked, 0 where
  // mask (non_differentiable) is true
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({result(0, {0}), arg(1, {0})}, [](C c) -> G {
      const IValue& dim = c.arg(2);
      return {_masked_softmax_backward(c.grad(), c.result(), c.input(1),
                                       dim.isNone() ? std::nullopt : std::optional<int64_t>(dim.toInt())),
              Tensor()};
    });
  }
};
struct structured__masked_softmax_backward {
  using Sig = Tensor(const Tensor&, const Tensor&, const Tensor&, std::optional<int64_t>);
  static constexpr const char* name = "aten::_masked_softmax_backward";
  static constexpr const char* schema = "(Tensor grad_output, Tensor output, Tensor mask, int? dim=None) -> Tensor";
  static constexpr auto meta = &masked_softmax_backward_meta;
  // out = mask ? 0 : y * (g - sum(g * y, dim))   (g = grad_output, y = _masked_softmax output;
  // the kernel's sum runs over the whole row, where y is 0 at the masked)
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({arg(0, {1}), arg(1, {0, 1}), arg(2, {0, 1})}, [](C c) -> G {
      // ggm: gg with the masked zeroed (they are constant zeros of out)
      Tensor ggm = masked_fill(c.grad(), c.input(2), 0.0);
      const IValue& d = c.arg(3);
      const int64_t dim = d.isNone() ? -1 : d.toInt();
      return {// d/dg: y * (ggm - sum(ggm * y)) (y need not be zero where masked here)
              if_needed(c, 0, [&] { return _softmax_backward_data(ggm, c.input(1), dim); }),
              if_needed(c, 1, [&] {
                // d/dy: ggm * (g - sum(g * y)) - g * sum(ggm * y)
                Tensor g = c.input(0), y = c.input(1);
                Shape dims{dim};
                return sub(mul(ggm, sub(g, sum(mul(g, y), dims, true))), mul(g, sum(mul(ggm, y), dims, true)));
              }),
              Tensor()};
    });
  }
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
