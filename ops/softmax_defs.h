// Mirrors torchgen's generated NativeMetaFunctions.h for SoftMax.cpp's structured ops
// (at::meta::structured_softmax, ...): the Defs (ops/structured.h) of softmax, log_softmax and
// their backward kernels, so that each op's name, schema and meta function exist once.
#pragma once

#include "ops/autocast.h"
#include "ops/autograd/derivative_rules.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

struct structured_softmax {
  using Sig = Tensor(const Tensor&, int64_t);
  static constexpr const char* name = "aten::softmax";
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
  static constexpr const char* name = "aten::log_softmax";
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

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_softmax_def(const F& f) {
  f(structured::DefTag<structured_softmax>{});
  f(structured::DefTag<structured_log_softmax>{});
  f(structured::DefTag<structured__softmax_backward_data>{});
  f(structured::DefTag<structured__log_softmax_backward_data>{});
}

}  // namespace remat::ops
