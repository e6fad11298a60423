// Mirrors native_functions.yaml's conj_physical (UnaryOps.cpp): its Def (ops/structured.h), the
// complex conjugate as a new tensor. PyTorch's conj() is a lazy view (a conjugate bit) that kernels
// resolve; remat has no such bit, so the one place that needs a conjugate (mul's derivative,
// grad * other.conj()) makes it. CPU and Meta kernels: ops/complex.cpp; CUDA: ops/cuda/complex.cpp.
#pragma once

#include "engine/core/tensor.h"
#include "ops/autograd/derivative_rules.h"
#include "ops/op_utils.h"
#include "ops/structured.h"

namespace remat::ops {

struct structured_conj_physical {
  using Sig = Tensor(const Tensor&);
  static constexpr const char* name = "aten::conj_physical";
  static constexpr const char* schema = "(Tensor self) -> Tensor";
  static constexpr bool supports_complex = true;
  static TensorMeta meta(const char* op, const Tensor& self) {
    check_defined(op, self, "self");
    return {self.sizes(), self.dtype(), self.device()};
  }
  // out = conj(self): the gradient's conjugate (derivatives.yaml: grad.conj_physical())
  static autograd::Derivative derivative() {
    using namespace autograd;
    return rule({}, [](C c) -> G { return {conj_physical(c.grad())}; });
  }
};

// f(structured::DefTag<Def>{}) for each of them (DefTag: ops/structured.h).
template <class F>
void for_each_complex_def(const F& f) {
  f(structured::DefTag<structured_conj_physical>{});
}

}  // namespace remat::ops
