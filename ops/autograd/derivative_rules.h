// Mirrors torch/csrc/autograd/FunctionsManual.cpp (the helpers the formulas of derivatives.yaml
// call) and the vocabulary of a derivatives.yaml entry: what a rule saves, for which inputs'
// gradients, and its flags. Each op's rule is its Def's derivative() (an in-place variant's:
// inplace_derivative()), defined beside the Def in its ops/*_defs.h family header (the
// elementwise ops: ops/pointwise_defs.h, after the table). ops/autograd/derivatives.h walks the
// Defs and names each rule by its Def, as gen_variable_type.py reads the yaml.
//
// A rule's body reads these names unqualified after `using namespace autograd;` (a using
// directive in the function, so that none of them leaks into remat::ops).
#pragma once

#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/autograd/derivative.h"
#include "ops/functions.h"

namespace remat::ops::autograd {

using C = const BackwardContext&;
using G = std::vector<Tensor>;

// ---- what a rule says (derivatives.yaml's vocabulary) ----

// What a rule saves, and for whose gradients: arg(1, {0}) saves tensor argument 1 for argument
// 0's gradient (mm's mat2 for self's); result(0, {0}) saves output 0 for it. A tensor is saved
// only when one of those gradients is needed, so a formula may read it only while computing
// one of them (derivatives.yaml's per-input formulas, and the should_compute_output guards of
// the generated code).
inline SavedTensor arg(size_t a, std::vector<size_t> read_by) {
  return {SavedTensor::Kind::Argument, a, std::move(read_by)};
}
inline SavedTensor result(size_t output, std::vector<size_t> read_by) {
  return {SavedTensor::Kind::Output, output, std::move(read_by)};
}

// A rule without its op's name: the registration takes it from the Def (Def::name, or
// Def::inplace_name with inplace set), so that the name is written once.
inline Derivative rule(std::vector<SavedTensor> saved, Formula f) {
  Derivative d;
  d.saved = std::move(saved);
  d.formula = std::move(f);
  return d;
}
// Outputs that never require grad (statistics, masks): no history, no gradient flows from them
// (derivatives.yaml's output_differentiability).
inline Derivative with_non_differentiable_outputs(Derivative d, std::vector<size_t> outputs) {
  d.non_differentiable_outputs = std::move(outputs);
  return d;
}
// Tensor arguments whose geometry the rule reads (TensorGeometry(self) in derivatives.yaml).
inline Derivative with_geometry_of(Derivative d, std::vector<size_t> args) {
  d.saved_geometries = std::move(args);
  return d;
}
// An op whose outputs never require grad (eq, zeros_like, detach: "output_differentiability:
// [False]"); it has no formula.
inline Derivative non_differentiable() {
  Derivative d;
  d.non_differentiable = true;
  return d;
}

// ---- helpers the formulas share (FunctionsManual.cpp) ----

// A gradient summed back to an input's shape (undoing broadcasting).
inline Tensor sum_to(const Tensor& g, const InputMetadata& m) {
  Tensor r = g.sizes() == m.shape ? g : sum_to_size(g, m.shape);
  return r.dtype() == m.dtype ? r : r.to(m.dtype);
}
inline Tensor if_needed(C c, size_t a, const std::function<Tensor()>& f) { return c.needs(a) ? f() : Tensor(); }

// mat2's gradient in mat2's own layout (FunctionsManual.cpp's mm_mat2_backward, which also reads
// only mat2's sizes and strides): for a column-major mat2 (a Linear's W^T) it is (grad^T self)^T,
// so that W's gradient comes out contiguous and AccumulateGrad takes it as is instead of copying
// a transposed one.
inline Tensor mm_mat2_backward(const Tensor& grad, const Tensor& self, const TensorGeometry& mat2) {
  const bool column_major = mat2.sizes[0] > 1 && mat2.sizes[1] > 1 && mat2.strides[0] == 1 &&
                            mat2.strides[1] >= mat2.sizes[0];
  if (column_major) return transpose(mm(transpose(grad, 0, 1), self), 0, 1);
  return mm(transpose(self, 0, 1), grad);
}

// Re-inserts reduced dims so a reduction's gradient broadcasts back (restore_reduced_dims).
inline Tensor unsqueeze_reduced(const Tensor& g, const Shape& in_shape, const Shape& dims, bool keepdim) {
  int64_t n = static_cast<int64_t>(in_shape.size());
  if (keepdim || n == 0) return g;  // a 0-d input reduces to a 0-d result
  std::vector<bool> reduced(static_cast<size_t>(n), dims.empty());
  for (int64_t d : dims) reduced[d < 0 ? d + n : d] = true;
  Tensor r = g;
  for (int64_t d = 0; d < n; ++d)
    if (reduced[d]) r = unsqueeze(r, d);
  return r;
}

// maximum / minimum: each input gets the gradient where it is the result, half of it on ties
// (PyTorch's where(self == other, grad / 2, grad).masked_fill_(self < other, 0)).
inline std::vector<Tensor> extremum_grads(C c) {
  Tensor a = c.input(0), b = c.input(1), out = c.result(), g = c.grad();
  Tensor ties = eq(a, b), zero = zeros_like(g), half = mul(g, 0.5);
  auto grad_of = [&](const Tensor& x, size_t a) {
    return c.needs(a) ? sum_to(where(ties, half, where(eq(out, x), g, zero)), c.meta(a)) : Tensor();
  };
  return {grad_of(a, 0), grad_of(b, 1)};
}

// ---- a Def's derivative entries (read by ops/autograd/derivatives.h) ----

// Whether Def gives its functional variant's rule (static Derivative derivative()) and its
// in-place variant's (static Derivative inplace_derivative()); a Def without one has no autograd
// kernel (its op runs autograd_not_implemented_fallback), like an op derivatives.yaml does not list.
template <class Def, class = void>
struct HasDerivative : std::false_type {};
template <class Def>
struct HasDerivative<Def, std::void_t<decltype(&Def::derivative)>> : std::true_type {};
template <class Def, class = void>
struct HasInplaceDerivative : std::false_type {};
template <class Def>
struct HasInplaceDerivative<Def, std::void_t<decltype(&Def::inplace_derivative)>> : std::true_type {};

// f(d) for each rule Def gives, named by the Def: the functional one under Def::name, the in-place
// one under Def::inplace_name with inplace set (argument 0 is modified in place and returned).
template <class Def, class F>
void for_each_derivative_of(const F& f) {
  if constexpr (HasDerivative<Def>::value) {
    Derivative d = Def::derivative();
    d.op = Def::name;
    f(std::move(d));
  }
  if constexpr (HasInplaceDerivative<Def>::value) {
    Derivative d = Def::inplace_derivative();
    d.op = Def::inplace_name;
    d.inplace = true;
    f(std::move(d));
  }
}

}  // namespace remat::ops::autograd
