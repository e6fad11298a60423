// Mirrors torchgen's generated NativeMetaFunctions.h for FusedAdam.cpp and FusedSGD.cpp's ops
// (_fused_adamw_, _fused_sgd_): their Defs (ops/structured.h: in-place alone, so an inplace name,
// schema and meta function; the schema's Tensor(a!) annotations are the tensors whose versions
// the in-place variant bumps), and what their kernels allocate, declared once. Their kernels are
// in ops/fused_adam.cpp, ops/fused_sgd.cpp and ops/cuda/ (one tensor per call, not PyTorch's
// tensor lists: the loop over parameters stays in nn/optim).
#pragma once

#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

struct structured__fused_adamw_ {
  using Sig = Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&, double, double, double, double, double,
                     int64_t, bool);
  static constexpr const char* inplace_name = "aten::_fused_adamw_";
  static constexpr const char* inplace_schema =
      "(Tensor(a!) self, Tensor(b!) exp_avg, Tensor(c!) exp_avg_sq, Tensor grad, *, float lr, float beta1, "
      "float beta2, float weight_decay, float eps, int step, bool maximize=False) -> Tensor(a!)";
  static constexpr auto inplace_meta = &fused_adamw_meta;
};
// momentum_buffer is None when momentum is 0.
struct structured__fused_sgd_ {
  using Sig = Tensor(const Tensor&, const Tensor&, const Tensor&, double, double, double, double, bool, bool, bool);
  static constexpr const char* inplace_name = "aten::_fused_sgd_";
  static constexpr const char* inplace_schema =
      "(Tensor(a!) self, Tensor grad, Tensor(b!)? momentum_buffer, *, float weight_decay, float momentum, "
      "float lr, float dampening, bool nesterov, bool maximize, bool is_first_step) -> Tensor(a!)";
  static constexpr auto inplace_meta = &fused_sgd_meta;
};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_fused_optimizer_def(const F& f) {
  f(structured::DefTag<structured__fused_adamw_>{});
  f(structured::DefTag<structured__fused_sgd_>{});
}

// The one temporary of every backend's kernel: the gradient as it reads it, contiguous (a copy of
// an expanded or strided gradient; the parameter and its state are contiguous by the meta
// function). Copies: CPUCopies, CUDACopies, or MetaCopies in the Meta kernels (ops/meta_copies.h).
template <class Copies>
Tensor fused_optimizer_grad(const Tensor& grad) {
  return Copies::contiguous(grad);
}

}  // namespace remat::ops
