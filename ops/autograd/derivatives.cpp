// Mirrors tools/autograd/derivatives.yaml and torch/csrc/autograd/FunctionsManual.cpp: the one
// table of derivative rules. Each rule says what its op saves for backward, and for which
// inputs' gradients (a tensor is saved only when one of them is needed, as in PyTorch), and
// returns one gradient per tensor input (argument order), built from dispatcher ops, so dispatch
// modes see backward's ops and create_graph records them.
//
// Over each rule, a comment restates the forward (llm.c style).
#include <cmath>

#include "ops/autograd/as_strided_backward.h"
#include "ops/autograd/derivative.h"
#include "ops/autograd/norm_backward.h"
#include "ops/functions.h"

namespace remat::ops::autograd {
namespace {

using C = const BackwardContext&;
using G = std::vector<Tensor>;

// A gradient summed back to an input's shape (undoing broadcasting).
Tensor sum_to(const Tensor& g, const InputMetadata& m) {
  Tensor r = g.sizes() == m.shape ? g : sum_to_size(g, m.shape);
  return r.dtype() == m.dtype ? r : r.to(m.dtype);
}
Tensor if_needed(C c, size_t a, const std::function<Tensor()>& f) { return c.needs(a) ? f() : Tensor(); }

// mat2's gradient in mat2's own layout (FunctionsManual.cpp's mm_mat2_backward, which also reads
// only mat2's sizes and strides): for a column-major mat2 (a Linear's W^T) it is (grad^T self)^T,
// so that W's gradient comes out contiguous and AccumulateGrad takes it as is instead of copying
// a transposed one.
Tensor mm_mat2_backward(const Tensor& grad, const Tensor& self, const TensorGeometry& mat2) {
  const bool column_major = mat2.sizes[0] > 1 && mat2.sizes[1] > 1 && mat2.strides[0] == 1 &&
                            mat2.strides[1] >= mat2.sizes[0];
  if (column_major) return transpose(mm(transpose(grad, 0, 1), self), 0, 1);
  return mm(transpose(self, 0, 1), grad);
}

// Re-inserts reduced dims so a reduction's gradient broadcasts back (restore_reduced_dims).
Tensor unsqueeze_reduced(const Tensor& g, const Shape& in_shape, const Shape& dims, bool keepdim) {
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
std::vector<Tensor> extremum_grads(const BackwardContext& c) {
  Tensor a = c.input(0), b = c.input(1), out = c.result(), g = c.grad();
  Tensor ties = eq(a, b), zero = zeros_like(g), half = mul(g, 0.5);
  auto grad_of = [&](const Tensor& x, size_t a) {
    return c.needs(a) ? sum_to(where(ties, half, where(eq(out, x), g, zero)), c.meta(a)) : Tensor();
  };
  return {grad_of(a, 0), grad_of(b, 1)};
}

// What a rule saves, and for whose gradients: arg(1, {0}) saves tensor argument 1 for argument
// 0's gradient (mm's mat2 for self's); result(0, {0}) saves output 0 for it. A tensor is saved
// only when one of those gradients is needed, so a formula may read it only while computing
// one of them (derivatives.yaml's per-input formulas, and the should_compute_output guards of
// the generated code).
SavedTensor arg(size_t a, std::vector<size_t> read_by) {
  return {SavedTensor::Kind::Argument, a, std::move(read_by)};
}
SavedTensor result(size_t output, std::vector<size_t> read_by) {
  return {SavedTensor::Kind::Output, output, std::move(read_by)};
}

Derivative rule(const char* op, std::vector<SavedTensor> saved, Formula f) {
  Derivative d;
  d.op = op;
  d.saved = std::move(saved);
  d.formula = std::move(f);
  return d;
}
Derivative inplace(Derivative d) {
  d.inplace = true;
  return d;
}
// Outputs that never require grad (statistics, masks): no history, no gradient flows from them.
Derivative with_non_differentiable_outputs(Derivative d, std::vector<size_t> outputs) {
  d.non_differentiable_outputs = std::move(outputs);
  return d;
}
// Tensor arguments whose geometry the rule reads (TensorGeometry(self) in derivatives.yaml).
Derivative with_geometry_of(Derivative d, std::vector<size_t> args) {
  d.saved_geometries = std::move(args);
  return d;
}
Derivative non_differentiable(const char* op) {
  Derivative d;
  d.op = op;
  d.non_differentiable = true;
  return d;
}

std::vector<Derivative> table() {
  return {
      // out = self + other
      rule("aten::add", {}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return sum_to(c.grad(), c.meta(0)); }),
                if_needed(c, 1, [&] { return sum_to(c.grad(), c.meta(1)); })};
      }),
      // out = self - other
      rule("aten::sub", {}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return sum_to(c.grad(), c.meta(0)); }),
                if_needed(c, 1, [&] { return sum_to(neg(c.grad()), c.meta(1)); })};
      }),
      // out = self * other
      rule("aten::mul", {arg(0, {1}), arg(1, {0})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return sum_to(mul(c.grad(), c.input(1)), c.meta(0)); }),
                if_needed(c, 1, [&] { return sum_to(mul(c.grad(), c.input(0)), c.meta(1)); })};
      }),
      // out = self / other
      rule("aten::div", {arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return sum_to(div(c.grad(), c.input(1)), c.meta(0)); }),
                if_needed(c, 1, [&] {
                  // d(a/b)/db = -a / b^2
                  Tensor b = c.input(1);
                  return sum_to(neg(div(mul(c.grad(), c.input(0)), mul(b, b))), c.meta(1));
                })};
      }),
      // out = self + s
      rule("aten::add.Scalar", {}, [](C c) -> G { return {c.grad()}; }),
      // out = self * s
      rule("aten::mul.Scalar", {}, [](C c) -> G { return {mul(c.grad(), c.scalar(1))}; }),
      // out = self / s
      rule("aten::div.Scalar", {}, [](C c) -> G { return {div(c.grad(), c.scalar(1))}; }),
      // out = self ^ e
      rule("aten::pow", {arg(0, {0})}, [](C c) -> G {
        double e = c.scalar(1);
        if (e == 0.0) return {zeros_like(c.grad())};
        return {mul(mul(c.grad(), pow(c.input(0), e - 1.0)), e)};
      }),
      // out = -self
      rule("aten::neg", {}, [](C c) -> G { return {neg(c.grad())}; }),
      // out = exp(self)
      rule("aten::exp", {result(0, {0})}, [](C c) -> G { return {mul(c.grad(), c.result())}; }),
      // out = log(self)
      rule("aten::log", {arg(0, {0})}, [](C c) -> G { return {div(c.grad(), c.input(0))}; }),
      // out = sin(self)
      rule("aten::sin", {arg(0, {0})}, [](C c) -> G { return {mul(c.grad(), cos(c.input(0)))}; }),
      // out = cos(self)
      rule("aten::cos", {arg(0, {0})}, [](C c) -> G { return {mul(c.grad(), neg(sin(c.input(0))))}; }),
      // out = tanh(self)
      rule("aten::tanh", {result(0, {0})}, [](C c) -> G { return {tanh_backward(c.grad(), c.result())}; }),
      // out = sigmoid(self)
      rule("aten::sigmoid", {result(0, {0})}, [](C c) -> G { return {sigmoid_backward(c.grad(), c.result())}; }),
      // out = relu(self)
      rule("aten::relu", {result(0, {0})}, [](C c) -> G { return {threshold_backward(c.grad(), c.result(), 0.0)}; }),
      // out = self * sigmoid(self)
      rule("aten::silu", {arg(0, {0})}, [](C c) -> G { return {silu_backward(c.grad(), c.input(0))}; }),
      // out = sqrt(self)
      rule("aten::sqrt", {result(0, {0})}, [](C c) -> G { return {div(c.grad(), mul(c.result(), 2.0))}; }),
      // out = 1 / sqrt(self);  d/dx = -0.5 * out^3
      rule("aten::rsqrt", {result(0, {0})}, [](C c) -> G {
        Tensor r = c.result();
        return {mul(mul(c.grad(), mul(mul(r, r), r)), -0.5)};
      }),
      // out = |self|;  d/dx = sign(x) = x / |x| (0 at 0)
      rule("aten::abs", {arg(0, {0})}, [](C c) -> G {
        Tensor x = c.input(0);
        Tensor zero = zeros_like(x);
        Tensor sign = where(eq(x, zero), zero, div(x, abs(x)));
        return {mul(c.grad(), sign)};
      }),
      // out = gelu(self, approximate)
      rule("aten::gelu", {arg(0, {0})}, [](C c) -> G { return {gelu_backward(c.grad(), c.input(0), c.str(1))}; }),
      // out = where(condition, self, other)
      rule("aten::where", {arg(0, {1, 2})}, [](C c) -> G {
        Tensor cond = c.input(0), zero = zeros_like(c.grad());
        return {Tensor(), if_needed(c, 1, [&] { return sum_to(where(cond, c.grad(), zero), c.meta(1)); }),
                if_needed(c, 2, [&] { return sum_to(where(cond, zero, c.grad()), c.meta(2)); })};
      }),
      // out = masked_fill(self, mask, value)
      rule("aten::masked_fill", {arg(1, {0})}, [](C c) -> G {
        return {masked_fill(c.grad(), c.input(1), 0.0), Tensor()};
      }),
      // out = maximum(self, other): the gradient goes to the larger input, split evenly on ties
      rule("aten::maximum", {arg(0, {0, 1}), arg(1, {0, 1}), result(0, {0, 1})},
           [](C c) -> G { return extremum_grads(c); }),
      // out = minimum(self, other): the same with the smaller input
      rule("aten::minimum", {arg(0, {0, 1}), arg(1, {0, 1}), result(0, {0, 1})},
           [](C c) -> G { return extremum_grads(c); }),
      // fused backward kernels, differentiated for double backward
      // out = grad * (self > threshold)
      rule("aten::threshold_backward", {arg(1, {0})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return threshold_backward(c.grad(), c.input(1), c.scalar(2)); }), Tensor()};
      }),
      // out = grad * y * (1 - y)
      rule("aten::sigmoid_backward", {arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return sigmoid_backward(c.grad(), c.input(1)); }),
                if_needed(c, 1, [&] { return mul(mul(c.grad(), c.input(0)), add(mul(c.input(1), -2.0), 1.0)); })};
      }),
      // out = grad * (1 - y^2)
      rule("aten::tanh_backward", {arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return tanh_backward(c.grad(), c.input(1)); }),
                if_needed(c, 1, [&] { return mul(mul(c.grad(), c.input(0)), mul(c.input(1), -2.0)); })};
      }),

      // out = grad * s (1 + x (1 - s)),  s = sigmoid(x);  d/dx = grad * s (1 - s) (2 + x (1 - 2 s))
      rule("aten::silu_backward", {arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return silu_backward(c.grad(), c.input(1)); }),
                if_needed(c, 1, [&] {
                  Tensor g = c.input(0), x = c.input(1), s = sigmoid(x);
                  Tensor ds = mul(s, add(neg(s), 1.0));  // s (1 - s)
                  return mul(mul(c.grad(), g), mul(ds, add(mul(x, add(mul(s, -2.0), 1.0)), 2.0)));
                })};
      }),
      // out = grad * gelu'(x)
      //   none: gelu'(x) = Phi(x) + x phi(x);  gelu''(x) = phi(x) (2 - x^2)
      //   tanh: gelu'(x) = (1 + t) / 2 + x (1 - t^2) k' / 2,  t = tanh(k),  k = b (x + a x^3),  k' = b (1 + 3 a x^2)
      //         gelu''(x) = (1 - t^2) (k' + x (k'' - 2 t k'^2) / 2),  k'' = 6 a b x
      rule("aten::gelu_backward", {arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
        const std::string& approximate = c.str(2);
        return {if_needed(c, 0, [&] { return gelu_backward(c.grad(), c.input(1), approximate); }),
                if_needed(c, 1, [&] {
                  Tensor g = c.input(0), x = c.input(1), x2 = mul(x, x);
                  Tensor second;
                  if (approximate == "tanh") {
                    const double a = 0.044715, b = 0.79788456080286535588;  // b = sqrt(2/pi)
                    Tensor t = tanh(mul(add(x, mul(mul(x2, x), a)), b));
                    Tensor k1 = mul(add(mul(x2, 3.0 * a), 1.0), b);
                    Tensor k2 = mul(x, 6.0 * a * b);
                    Tensor inner = add(k1, mul(mul(x, sub(k2, mul(mul(t, mul(k1, k1)), 2.0))), 0.5));
                    second = mul(add(neg(mul(t, t)), 1.0), inner);
                  } else {
                    Tensor pdf = mul(exp(mul(x2, -0.5)), 0.39894228040143267794);  // 1/sqrt(2 pi)
                    second = mul(pdf, add(neg(x2), 2.0));
                  }
                  return mul(mul(c.grad(), g), second);
                })};
      }),

      // out = self @ mat2 (mat2's geometry: its gradient takes mat2's layout)
      with_geometry_of(rule("aten::mm", {arg(0, {1}), arg(1, {0})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return mm(c.grad(), transpose(c.input(1), 0, 1)); }),
                if_needed(c, 1, [&] { return mm_mat2_backward(c.grad(), c.input(0), c.geometry(1)); })};
      }), {1}),
      // out[b...] = self[b...] @ mat2[b...] (up to four batch dims)
      rule("aten::bmm", {arg(0, {1}), arg(1, {0})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return bmm(c.grad(), transpose(c.input(1), -2, -1)); }),
                if_needed(c, 1, [&] { return bmm(transpose(c.input(0), -2, -1), c.grad()); })};
      }),
      // out = self + mat1 @ mat2
      with_geometry_of(rule("aten::addmm", {arg(1, {2}), arg(2, {1})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return sum_to(c.grad(), c.meta(0)); }),
                if_needed(c, 1, [&] { return mm(c.grad(), transpose(c.input(2), 0, 1)); }),
                if_needed(c, 2, [&] { return mm_mat2_backward(c.grad(), c.input(1), c.geometry(2)); })};
      }), {2}),

      // out = sum(self, dim, keepdim)
      rule("aten::sum", {}, [](C c) -> G {
        const Shape& in = c.meta(0).shape;
        return {expand(unsqueeze_reduced(c.grad(), in, c.ints(1), c.flag(2)), in)};
      }),
      // out = mean(self, dim, keepdim)
      rule("aten::mean", {}, [](C c) -> G {
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
      }),
      // out = amax(self, dim, keepdim): the gradient is shared evenly by the maxima
      rule("aten::amax", {arg(0, {0}), result(0, {0})}, [](C c) -> G {
        Tensor x = c.input(0);
        const Shape& in = c.meta(0).shape;
        Shape dims{c.integer(1)};
        bool keepdim = c.flag(2);
        Tensor y = unsqueeze_reduced(c.result(), in, dims, keepdim);
        Tensor g = unsqueeze_reduced(c.grad(), in, dims, keepdim);
        Tensor is_max = eq(x, y).to(x.dtype());
        Tensor count = sum(is_max, dims, true);
        return {mul(div(g, count), is_max)};
      }),

      // views
      rule("aten::view", {}, [](C c) -> G { return {reshape(c.grad(), c.meta(0).shape)}; }),
      rule("aten::transpose", {}, [](C c) -> G { return {transpose(c.grad(), c.integer(1), c.integer(2))}; }),
      rule("aten::permute", {}, [](C c) -> G {
        Shape dims = c.ints(1), inverse(dims.size());
        int64_t n = static_cast<int64_t>(dims.size());
        for (int64_t i = 0; i < n; ++i) inverse[dims[i] < 0 ? dims[i] + n : dims[i]] = i;
        return {permute(c.grad(), inverse)};
      }),
      rule("aten::slice", {}, [](C c) -> G {
        return {slice_backward(c.grad(), c.meta(0).shape, c.integer(1), c.integer(2), c.integer(3), c.integer(4))};
      }),
      rule("aten::slice_backward", {}, [](C c) -> G {
        return {slice(c.grad(), c.integer(2), c.integer(3), c.integer(4), c.integer(5))};
      }),
      rule("aten::unsqueeze", {}, [](C c) -> G { return {squeeze(c.grad(), c.integer(1))}; }),
      rule("aten::squeeze", {}, [](C c) -> G { return {reshape(c.grad(), c.meta(0).shape)}; }),
      rule("aten::expand", {}, [](C c) -> G { return {sum_to(c.grad(), c.meta(0))}; }),
      // out = self's storage read with geometry (size, stride, storage_offset)
      with_geometry_of(rule("aten::as_strided", {}, [](C c) -> G {
        const TensorGeometry& self = c.geometry(0);
        int64_t offset = c.is_none(3) ? self.storage_offset : c.integer(3);
        return {as_strided_backward(c.grad(), self, c.ints(1), c.ints(2), offset)};
      }), {0}),
      // out = self[..., index, ...] (dim removed)
      rule("aten::select", {}, [](C c) -> G {
        const Shape& in = c.meta(0).shape;
        int64_t dim = maybe_wrap_dim(c.integer(1), static_cast<int64_t>(in.size()), "aten::select");
        int64_t index = c.integer(2) < 0 ? c.integer(2) + in[dim] : c.integer(2);
        return {slice_backward(unsqueeze(c.grad(), dim), in, dim, index, index + 1, 1)};
      }),
      // outs[i] = self.select(dim, i): the gradients, stacked (FunctionsManual.cpp unbind_backward)
      // into one buffer; unused outputs arrive as zeros.
      rule("aten::unbind.int", {}, [](C c) -> G {
        const Shape& in = c.meta(0).shape;
        int64_t dim = maybe_wrap_dim(c.integer(1), static_cast<int64_t>(in.size()), "aten::unbind");
        G parts;
        for (int64_t i = 0; i < in[dim]; ++i) parts.push_back(unsqueeze(c.grad(static_cast<size_t>(i)), dim));
        return {cat(parts, dim)};
      }),
      // out[i] = consecutive pieces of self along dim, of sizes split_sizes[i]
      rule("aten::split_with_sizes", {}, [](C c) -> G {
        G parts;
        for (size_t i = 0; i < c.ints(1).size(); ++i) parts.push_back(c.grad(i));
        return {cat(parts, c.integer(2))};
      }),

      // copies and conversions
      rule("aten::clone", {}, [](C c) -> G { return {c.grad()}; }),
      rule("aten::_to_copy", {}, [](C c) -> G {
        const InputMetadata& m = c.meta(0);
        Tensor g = c.grad();
        return {_to_copy(g, g.dtype() == m.dtype ? std::nullopt : std::optional<ScalarType>(m.dtype),
                         g.device() == m.device ? std::nullopt : std::optional<Device>(m.device))};
      }),
      rule("aten::cat", {}, [](C c) -> G {
        G out;
        int64_t dim = c.integer(1), offset = 0;
        size_t n = c.list_size(0);
        int64_t ndim = static_cast<int64_t>(c.meta(0, 0).shape.size());
        dim = dim < 0 ? dim + ndim : dim;
        for (size_t k = 0; k < n; ++k) {
          int64_t len = c.meta(0, k).shape[dim];
          out.push_back(c.needs(0, k) ? slice(c.grad(), dim, offset, offset + len, 1) : Tensor());
          offset += len;
        }
        return out;
      }),
      rule("aten::triu", {}, [](C c) -> G { return {triu(c.grad(), c.integer(1))}; }),

      // in-place: the gradient flows to self's old value and to the other operand
      inplace(rule("aten::add_", {}, [](C c) -> G {
        return {c.grad(), if_needed(c, 1, [&] { return sum_to(c.grad(), c.meta(1)); })};
      })),
      inplace(rule("aten::add_.Scalar", {}, [](C c) -> G { return {c.grad()}; })),
      inplace(rule("aten::mul_", {arg(0, {1}), arg(1, {0})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return mul(c.grad(), c.input(1)); }),
                if_needed(c, 1, [&] { return sum_to(mul(c.grad(), c.input(0)), c.meta(1)); })};
      })),
      inplace(rule("aten::mul_.Scalar", {}, [](C c) -> G { return {mul(c.grad(), c.scalar(1))}; })),
      inplace(rule("aten::relu_", {result(0, {0})}, [](C c) -> G {
        return {threshold_backward(c.grad(), c.result(), 0.0)};
      })),
      inplace(rule("aten::zero_", {}, [](C c) -> G { return {zeros_like(c.grad())}; })),
      inplace(rule("aten::fill_", {}, [](C c) -> G { return {zeros_like(c.grad())}; })),
      inplace(rule("aten::copy_", {}, [](C c) -> G {
        return {zeros_like(c.grad()), if_needed(c, 1, [&] { return sum_to(c.grad(), c.meta(1)); })};
      })),
      inplace(rule("aten::uniform_", {}, [](C c) -> G { return {zeros_like(c.grad())}; })),
      // self += value * t1 * t2
      inplace(rule("aten::addcmul_", {arg(1, {2}), arg(2, {1})}, [](C c) -> G {
        double v = c.scalar(3);
        return {c.grad(), if_needed(c, 1, [&] { return sum_to(mul(c.grad(), mul(c.input(2), v)), c.meta(1)); }),
                if_needed(c, 2, [&] { return sum_to(mul(c.grad(), mul(c.input(1), v)), c.meta(2)); })};
      })),
      // self += value * t1 / t2
      inplace(rule("aten::addcdiv_", {arg(1, {2}), arg(2, {1, 2})}, [](C c) -> G {
        double v = c.scalar(3);
        return {c.grad(), if_needed(c, 1, [&] { return sum_to(div(mul(c.grad(), v), c.input(2)), c.meta(1)); }),
                if_needed(c, 2, [&] {
                  // d/dt2 = -value * t1 / t2^2
                  Tensor t2 = c.input(2);
                  return sum_to(mul(c.grad(), div(mul(c.input(1), -v), mul(t2, t2))), c.meta(2));
                })};
      })),
      // self = self + weight * (end - self)
      inplace(rule("aten::lerp_.Scalar", {}, [](C c) -> G {
        double w = c.scalar(2);
        return {mul(c.grad(), 1.0 - w), if_needed(c, 1, [&] { return sum_to(mul(c.grad(), w), c.meta(1)); })};
      })),
      inplace(rule("aten::normal_", {}, [](C c) -> G { return {zeros_like(c.grad())}; })),

      // ---- normalisation, activations with state, losses, attention (ops/nn ops) ----

      // out = softmax(self, dim)
      rule("aten::softmax", {result(0, {0})}, [](C c) -> G {
        return {_softmax_backward_data(c.grad(), c.result(), c.integer(1))};
      }),
      // out = log_softmax(self, dim)
      rule("aten::log_softmax", {result(0, {0})}, [](C c) -> G {
        return {_log_softmax_backward_data(c.grad(), c.result(), c.integer(1))};
      }),
      // out = _masked_softmax(self, mask, dim, mask_type): softmax over the unmasked, 0 where
      // mask (non_differentiable) is true
      rule("aten::_masked_softmax", {result(0, {0}), arg(1, {0})}, [](C c) -> G {
        const IValue& dim = c.arg(2);
        return {_masked_softmax_backward(c.grad(), c.result(), c.input(1),
                                         dim.isNone() ? std::nullopt : std::optional<int64_t>(dim.toInt())),
                Tensor()};
      }),
      // out = mask ? 0 : y * (g - sum(g * y, dim))   (g = grad_output, y = _masked_softmax output;
      // the kernel's sum runs over the whole row, where y is 0 at the masked)
      rule("aten::_masked_softmax_backward", {arg(0, {1}), arg(1, {0, 1}), arg(2, {0, 1})}, [](C c) -> G {
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
      }),
      // out = y * (g - sum(g * y, dim))          (g = grad_output, y = softmax output)
      rule("aten::_softmax_backward_data", {arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
        Tensor gg = c.grad();
        Shape dim{c.integer(2)};
        return {if_needed(c, 0, [&] { return _softmax_backward_data(gg, c.input(1), dim[0]); }),
                if_needed(c, 1, [&] {
                  // d/dy: gg * (g - sum(g * y)) - g * sum(gg * y)
                  Tensor g = c.input(0), y = c.input(1);
                  return sub(mul(gg, sub(g, sum(mul(g, y), dim, true))), mul(g, sum(mul(gg, y), dim, true)));
                })};
      }),
      // out = g - exp(y) * sum(g, dim)            (g = grad_output, y = log_softmax output)
      rule("aten::_log_softmax_backward_data", {arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
        Tensor gg = c.grad();
        Shape dim{c.integer(2)};
        return {if_needed(c, 0, [&] { return sub(gg, sum(mul(gg, exp(c.input(1))), dim, true)); }),
                if_needed(c, 1, [&] { return neg(mul(mul(gg, exp(c.input(1))), sum(c.input(0), dim, true))); })};
      }),
      // out, mean, rstd = native_layer_norm(input, normalized_shape, weight, bias, eps)
      // input, mean, rstd: read by input's and weight's gradients; weight: by input's (it scales
      // it) and weight's, bias: by bias's (the fused kernel returns a parameter's gradient only for
      // a parameter passed to it)
      with_non_differentiable_outputs(rule("aten::native_layer_norm", {arg(0, {0, 2}), arg(2, {0, 2}), arg(3, {3}),
                                                                        result(1, {0, 2}), result(2, {0, 2})},
                                           [](C c) -> G {
        // bias's gradient alone is grad summed over the rows: no saved tensor needed
        if (!c.needs(0) && !c.needs(2))
          return {Tensor(), Tensor(), if_needed(c, 3, [&] { return sum_to(c.grad(0), c.meta(3)); })};
        // the fused kernel computes bias's gradient only for a bias passed to it
        auto [dx, dw, db] = native_layer_norm_backward(c.grad(0), c.input(0), c.ints(1), c.result(1), c.result(2),
                                                       c.input(2), c.needs(3) ? c.input(3) : Tensor());
        return {dx, dw, db};
      }), {1, 2}),
      // (dx, dw, db) = native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias);
      // mean and rstd get no gradient: input's accounts for them (ops/autograd/norm_backward.cpp)
      // (bias is read by no gradient: only whether it was given matters)
      rule("aten::native_layer_norm_backward",
           {arg(0, {1, 5}), arg(1, {0, 1, 5}), arg(3, {0, 1, 5}), arg(4, {0, 1, 5}), arg(5, {0, 1, 5})}, [](C c) -> G {
        if (!c.needs(0) && !c.needs(1) && !c.needs(5)) return G(6);  // mean's or rstd's: none
        NormDoubleBackward d = norm_double_backward(
            /*center=*/true, c.needs(1) || c.needs(5) ? c.input(0) : Tensor(), c.input(1), c.ints(2), c.input(3),
            c.input(4), c.input(5), c.grad(0), c.is_none(5) ? Tensor() : c.grad(1),
            c.is_none(6) ? Tensor() : c.grad(2), c.needs(0), c.needs(1), c.needs(5));
        return {d.grad_grad_out, d.grad_input, Tensor(), Tensor(), d.grad_weight, Tensor()};
      }),
      // out, rstd = _fused_rms_norm(input, normalized_shape, weight, eps)
      with_non_differentiable_outputs(rule("aten::_fused_rms_norm", {arg(0, {0, 2}), arg(2, {0, 2}), result(1, {0, 2})},
                                           [](C c) -> G {
        auto [dx, dw] = _fused_rms_norm_backward(c.grad(0), c.input(0), c.ints(1), c.result(1), c.input(2));
        return {dx, dw};
      }), {1}),
      // (dx, dw) = _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight)
      rule("aten::_fused_rms_norm_backward", {arg(0, {1, 4}), arg(1, {0, 1, 4}), arg(3, {0, 1, 4}), arg(4, {0, 1, 4})},
           [](C c) -> G {
        if (!c.needs(0) && !c.needs(1) && !c.needs(4)) return G(4);  // rstd's: none
        NormDoubleBackward d = norm_double_backward(
            /*center=*/false, c.needs(1) || c.needs(4) ? c.input(0) : Tensor(), c.input(1), c.ints(2), Tensor(),
            c.input(3), c.input(4), c.grad(0), c.is_none(4) ? Tensor() : c.grad(1), Tensor(), c.needs(0), c.needs(1),
            c.needs(4));
        return {d.grad_grad_out, d.grad_input, Tensor(), d.grad_weight};
      }),
      // out, mask = native_dropout(input, p): out = input * mask * scale, scale = 1 / (1 - p) (0 for p = 1)
      with_non_differentiable_outputs(rule("aten::native_dropout", {result(1, {0})}, [](C c) -> G {
        double p = c.scalar(1);
        return {native_dropout_backward(c.grad(0), c.result(1), p == 1.0 ? 0.0 : 1.0 / (1.0 - p))};
      }), {1}),
      // out = grad_output * mask * scale
      rule("aten::native_dropout_backward", {arg(1, {0})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return native_dropout_backward(c.grad(), c.input(1), c.scalar(2)); }), Tensor()};
      }),
      // out = weight[indices]
      rule("aten::embedding", {arg(1, {0})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return embedding_dense_backward(c.grad(), c.input(1), c.meta(0).shape[0]); }),
                Tensor()};
      }),
      // out = zeros(num_weights, D); out[indices[i]] += grad_output[i]
      rule("aten::embedding_dense_backward", {arg(1, {0})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return embedding(c.grad(), c.input(1)); }), Tensor()};
      }),
      // out = mean_i (logsumexp(self[i]) - self[i, target[i]])
      rule("aten::cross_entropy", {arg(0, {0}), arg(1, {0})}, [](C c) -> G {
        return {if_needed(c, 0, [&] { return cross_entropy_backward(c.grad(), c.input(0), c.input(1)); }), Tensor()};
      }),
      // out = (softmax(self) - onehot(target)) * grad_output / N
      rule("aten::cross_entropy_backward", {arg(0, {1}), arg(1, {0, 1}), arg(2, {0, 1})}, [](C c) -> G {
        Tensor x = c.input(1), t = c.input(2), gg = c.grad();
        return {if_needed(c, 0, [&] {
                  // out is linear in grad_output: d/dg = sum(gg * out(g = 1))
                  const InputMetadata& g = c.meta(0);
                  Tensor one = ones(g.shape, TensorOptions().dtype(g.dtype).device(g.device));
                  return reshape(sum(mul(gg, cross_entropy_backward(one, x, t))), g.shape);
                }),
                if_needed(c, 1, [&] {
                  double n = static_cast<double>(x.sizes()[0]);
                  return mul(_softmax_backward_data(gg, softmax(x, 1), 1), div(c.input(0), n));
                }),
                Tensor()};
      }),

      // output, logsumexp = _scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p, is_causal,
      //                                                               attn_mask, scale)
      // as derivatives.yaml: the three gradients come from one backward call that reads query, key,
      // value, output and logsumexp (it recomputes the attention weights); logsumexp gets none. Its
      // backward op has no derivative (create_graph through it fails in the double backward).
      with_non_differentiable_outputs(
          rule("aten::_scaled_dot_product_flash_attention_for_cpu",
               {arg(0, {0, 1, 2}), arg(1, {0, 1, 2}), arg(2, {0, 1, 2}), result(0, {0, 1, 2}), result(1, {0, 1, 2})},
               [](C c) -> G {
                 if (!c.grad(0).defined()) return G(4);
                 std::optional<double> scale;
                 if (!c.is_none(6)) scale = c.scalar(6);
                 auto [dq, dk, dv] = _scaled_dot_product_flash_attention_for_cpu_backward(
                     c.grad(0), c.input(0), c.input(1), c.input(2), c.result(0), c.result(1), c.scalar(3), c.flag(4),
                     Tensor(), scale);
                 return {dq, dk, dv, Tensor()};
               }),
          {1}),
      // output, log_sumexp, philox_seed, philox_offset = _scaled_dot_product_efficient_attention(
      //     query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, scale)
      // as derivatives.yaml (output_differentiability: [True, False, False, False]): one backward call
      // gives the three gradients from query, key, value, output, log_sumexp and the philox state;
      // attn_bias (always undefined here) gets none.
      with_non_differentiable_outputs(
          rule("aten::_scaled_dot_product_efficient_attention",
               {arg(0, {0, 1, 2}), arg(1, {0, 1, 2}), arg(2, {0, 1, 2}), result(0, {0, 1, 2}), result(1, {0, 1, 2}),
                result(2, {0, 1, 2}), result(3, {0, 1, 2})},
               [](C c) -> G {
                 if (!c.grad(0).defined()) return G(4);
                 std::optional<double> scale;
                 if (!c.is_none(7)) scale = c.scalar(7);
                 auto [dq, dk, dv, dbias] = _scaled_dot_product_efficient_attention_backward(
                     c.grad(0), c.input(0), c.input(1), c.input(2), Tensor(), c.result(0), c.result(1), c.result(2),
                     c.result(3), c.scalar(5), c.flag(6), scale);
                 return {dq, dk, dv, dbias};
               }),
          {1, 2, 3}),

      non_differentiable("aten::eq"),
      non_differentiable("aten::zeros_like"),
      non_differentiable("aten::ones_like"),
      non_differentiable("aten::detach"),
  };
}

struct RegisterDerivatives {
  RegisterDerivatives() {
    for (Derivative& d : table()) register_derivative(std::move(d));
  }
} register_derivatives;

}  // namespace
}  // namespace remat::ops::autograd
