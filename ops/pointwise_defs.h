// Mirrors torchgen's generated NativeMetaFunctions.h (at::meta::structured_sigmoid, ...): one
// struct per elementwise op of ops/pointwise.def, with its name, schemas, C++ signature and meta
// function, in the form ops/structured.h reads (a Def). Every backend includes this one header,
// so the op's name and checks exist once.
#pragma once

#include <string>

#include "kernels/gelu_constants.h"
#include "ops/autograd/derivative_rules.h"
#include "ops/meta.h"
#include "ops/structured.h"

namespace remat::ops {

#define REMAT_VARIANT_INPLACE(...) __VA_ARGS__
#define REMAT_VARIANT_NO_INPLACE(...)

#define REMAT_UNARY(NAME, NEEDS_FLOAT, CPU_OP, CUDA_OP, VARIANTS)                                      \
  struct structured_##NAME {                                                                         \
    using Sig = Tensor(const Tensor&);                                                               \
    static constexpr const char* name = "aten::" #NAME;                                              \
    static constexpr const char* schema = "(Tensor self) -> Tensor";                                 \
    static constexpr bool needs_float = NEEDS_FLOAT;                                                 \
    static TensorMeta meta(const char* op, const Tensor& self) { return unary_meta(op, self, NEEDS_FLOAT); } \
    static autograd::Derivative derivative();                                                        \
    REMAT_VARIANT_##VARIANTS(                                                                        \
        static constexpr const char* inplace_name = "aten::" #NAME "_";                              \
        static constexpr const char* inplace_schema = "(Tensor(a!) self) -> Tensor(a!)";             \
        static void inplace_meta(const char* op, const Tensor& self) { check_inplace_result(op, self, meta(op, self)); } \
        static autograd::Derivative inplace_derivative();)                                           \
  };

#define REMAT_BINARY(NAME, META, CPU_OP, CUDA_OP, VARIANTS)                                             \
  struct structured_##NAME {                                                                         \
    using Sig = Tensor(const Tensor&, const Tensor&);                                                \
    static constexpr const char* name = "aten::" #NAME;                                              \
    static constexpr const char* schema = "(Tensor self, Tensor other) -> Tensor";                   \
    static TensorMeta meta(const char* op, const Tensor& self, const Tensor& other) { return META(op, self, other); } \
    static autograd::Derivative derivative();                                                        \
    REMAT_VARIANT_##VARIANTS(                                                                        \
        static constexpr const char* inplace_name = "aten::" #NAME "_";                              \
        static constexpr const char* inplace_schema = "(Tensor(a!) self, Tensor other) -> Tensor(a!)"; \
        static void inplace_meta(const char* op, const Tensor& self, const Tensor& other) {          \
          check_inplace_result(op, self, meta(op, self, other));                                     \
        }                                                                                            \
        static autograd::Derivative inplace_derivative();)                                           \
  };

#define REMAT_SCALAR(NAME, META, CPU_OP, CUDA_OP, VARIANTS)                                             \
  struct structured_##NAME##_Scalar {                                                                \
    using Sig = Tensor(const Tensor&, double);                                                       \
    static constexpr const char* name = "aten::" #NAME ".Scalar";                                    \
    static constexpr const char* schema = "(Tensor self, float other) -> Tensor";                    \
    static TensorMeta meta(const char* op, const Tensor& self, double other) { return META(op, self, other); } \
    static autograd::Derivative derivative();                                                        \
    REMAT_VARIANT_##VARIANTS(                                                                        \
        static constexpr const char* inplace_name = "aten::" #NAME "_.Scalar";                       \
        static constexpr const char* inplace_schema = "(Tensor(a!) self, float other) -> Tensor(a!)"; \
        static void inplace_meta(const char* op, const Tensor& self, double other) {                 \
          check_inplace_scalar(op, self, other);                                                     \
        }                                                                                            \
        static autograd::Derivative inplace_derivative();)                                           \
  };

#define REMAT_POINTWISE(NAME, SCHEMA, SIGNATURE, META, CPU_IMPL, CUDA_IMPL) \
  struct structured_##NAME {                                              \
    using Sig = Tensor SIGNATURE;                                         \
    static constexpr const char* name = "aten::" #NAME;                   \
    static constexpr const char* schema = SCHEMA;                         \
    static constexpr auto meta = &META;                                   \
    static autograd::Derivative derivative();                             \
  };

#define REMAT_POINTWISE_INPLACE(NAME, OVERLOAD, SCHEMA, SIGNATURE, META, CPU_IMPL, CUDA_IMPL) \
  struct structured_##NAME##_ {                                                                 \
    using Sig = Tensor SIGNATURE;                                                               \
    static constexpr const char* inplace_name = "aten::" #NAME "_" OVERLOAD;                    \
    static constexpr const char* inplace_schema = SCHEMA;                                       \
    static constexpr auto inplace_meta = &META;                                                 \
    static autograd::Derivative inplace_derivative();                                           \
  };

#include "ops/pointwise.def"

#undef REMAT_VARIANT_INPLACE
#undef REMAT_VARIANT_NO_INPLACE

// mul (and mul_) is the one elementwise op of the table that computes on complex tensors (the
// rotary embeddings' product); the others refuse them (ops/structured.h).
namespace structured {
template <>
struct SupportsComplex<structured_mul, void> : std::true_type {};
}  // namespace structured

// other.conj() where a derivative needs it (FunctionsManual.cpp): a copy for complex, t itself else.
inline Tensor conj_if_complex(const Tensor& t) { return isComplexType(t.dtype()) ? conj_physical(t) : t; }

// ---- the derivatives (derivatives.yaml's entries of these ops): each row's Def declares
// derivative() (and, with INPLACE, inplace_derivative()); its rule follows, in the table's order.
// Each returns one gradient per tensor input, built from dispatcher ops, so dispatch modes see
// backward's ops and create_graph records them. Over each rule, the forward (llm.c style). ----

// out = -self
inline autograd::Derivative structured_neg::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {neg(c.grad())}; });
}
// out = exp(self)
inline autograd::Derivative structured_exp::derivative() {
  using namespace autograd;
  return rule({result(0, {0})}, [](C c) -> G { return {mul(c.grad(), c.result())}; });
}
// out = log(self)
inline autograd::Derivative structured_log::derivative() {
  using namespace autograd;
  return rule({arg(0, {0})}, [](C c) -> G { return {div(c.grad(), c.input(0))}; });
}
// out = sin(self)
inline autograd::Derivative structured_sin::derivative() {
  using namespace autograd;
  return rule({arg(0, {0})}, [](C c) -> G { return {mul(c.grad(), cos(c.input(0)))}; });
}
// out = cos(self)
inline autograd::Derivative structured_cos::derivative() {
  using namespace autograd;
  return rule({arg(0, {0})}, [](C c) -> G { return {mul(c.grad(), neg(sin(c.input(0))))}; });
}
// out = tanh(self)
inline autograd::Derivative structured_tanh::derivative() {
  using namespace autograd;
  return rule({result(0, {0})}, [](C c) -> G { return {tanh_backward(c.grad(), c.result())}; });
}
// out = sigmoid(self)
inline autograd::Derivative structured_sigmoid::derivative() {
  using namespace autograd;
  return rule({result(0, {0})}, [](C c) -> G { return {sigmoid_backward(c.grad(), c.result())}; });
}
// out = relu(self)
inline autograd::Derivative structured_relu::derivative() {
  using namespace autograd;
  return rule({result(0, {0})}, [](C c) -> G { return {threshold_backward(c.grad(), c.result(), 0.0)}; });
}
// self = relu(self): the gradient flows to self's old value through the result
inline autograd::Derivative structured_relu::inplace_derivative() {
  using namespace autograd;
  return rule({result(0, {0})}, [](C c) -> G { return {threshold_backward(c.grad(), c.result(), 0.0)}; });
}
// out = self * sigmoid(self)
inline autograd::Derivative structured_silu::derivative() {
  using namespace autograd;
  return rule({arg(0, {0})}, [](C c) -> G { return {silu_backward(c.grad(), c.input(0))}; });
}
// out = sqrt(self)
inline autograd::Derivative structured_sqrt::derivative() {
  using namespace autograd;
  return rule({result(0, {0})}, [](C c) -> G { return {div(c.grad(), mul(c.result(), 2.0))}; });
}
// out = 1 / sqrt(self);  d/dx = -0.5 * out^3
inline autograd::Derivative structured_rsqrt::derivative() {
  using namespace autograd;
  return rule({result(0, {0})}, [](C c) -> G {
    Tensor r = c.result();
    return {mul(mul(c.grad(), mul(mul(r, r), r)), -0.5)};
  });
}
// out = |self|;  d/dx = sign(x) = x / |x| (0 at 0)
inline autograd::Derivative structured_abs::derivative() {
  using namespace autograd;
  return rule({arg(0, {0})}, [](C c) -> G {
    Tensor x = c.input(0);
    Tensor zero = zeros_like(x);
    Tensor sign = where(eq(x, zero), zero, div(x, abs(x)));
    return {mul(c.grad(), sign)};
  });
}

// out = self + other
inline autograd::Derivative structured_add::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G {
    return {if_needed(c, 0, [&] { return sum_to(c.grad(), c.meta(0)); }),
            if_needed(c, 1, [&] { return sum_to(c.grad(), c.meta(1)); })};
  });
}
// self += other: the gradient flows to self's old value and to other
inline autograd::Derivative structured_add::inplace_derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {c.grad(), if_needed(c, 1, [&] { return sum_to(c.grad(), c.meta(1)); })}; });
}
// out = self - other
inline autograd::Derivative structured_sub::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G {
    return {if_needed(c, 0, [&] { return sum_to(c.grad(), c.meta(0)); }),
            if_needed(c, 1, [&] { return sum_to(neg(c.grad()), c.meta(1)); })};
  });
}
// out = self * other
// (FunctionsManual.cpp's mul_tensor_backward: grad * other.conj(), the conjugate for complex operands)
inline autograd::Derivative structured_mul::derivative() {
  using namespace autograd;
  return rule({arg(0, {1}), arg(1, {0})}, [](C c) -> G {
    return {if_needed(c, 0, [&] { return sum_to(mul(c.grad(), conj_if_complex(c.input(1))), c.meta(0)); }),
            if_needed(c, 1, [&] { return sum_to(mul(c.grad(), conj_if_complex(c.input(0))), c.meta(1)); })};
  });
}
// self *= other (self keeps its shape: its gradient needs no sum_to)
inline autograd::Derivative structured_mul::inplace_derivative() {
  using namespace autograd;
  return rule({arg(0, {1}), arg(1, {0})}, [](C c) -> G {
    return {if_needed(c, 0, [&] { return mul(c.grad(), conj_if_complex(c.input(1))); }),
            if_needed(c, 1, [&] { return sum_to(mul(c.grad(), conj_if_complex(c.input(0))), c.meta(1)); })};
  });
}
// out = self / other
inline autograd::Derivative structured_div::derivative() {
  using namespace autograd;
  return rule({arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
    return {if_needed(c, 0, [&] { return sum_to(div(c.grad(), c.input(1)), c.meta(0)); }),
            if_needed(c, 1, [&] {
              // d(a/b)/db = -a / b^2
              Tensor b = c.input(1);
              return sum_to(neg(div(mul(c.grad(), c.input(0)), mul(b, b))), c.meta(1));
            })};
  });
}

// out = self + s
inline autograd::Derivative structured_add_Scalar::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {c.grad()}; });
}
// self += s
inline autograd::Derivative structured_add_Scalar::inplace_derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {c.grad()}; });
}
// out = self * s
inline autograd::Derivative structured_mul_Scalar::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {mul(c.grad(), c.scalar(1))}; });
}
// self *= s
inline autograd::Derivative structured_mul_Scalar::inplace_derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {mul(c.grad(), c.scalar(1))}; });
}
// out = self / s
inline autograd::Derivative structured_div_Scalar::derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G { return {div(c.grad(), c.scalar(1))}; });
}

// out = self ^ e
inline autograd::Derivative structured_pow::derivative() {
  using namespace autograd;
  return rule({arg(0, {0})}, [](C c) -> G {
    double e = c.scalar(1);
    if (e == 0.0) return {zeros_like(c.grad())};
    return {mul(mul(c.grad(), pow(c.input(0), e - 1.0)), e)};
  });
}
// out = gelu(self, approximate)
inline autograd::Derivative structured_gelu::derivative() {
  using namespace autograd;
  return rule({arg(0, {0})}, [](C c) -> G { return {gelu_backward(c.grad(), c.input(0), c.str(1))}; });
}
// out = maximum(self, other): the gradient goes to the larger input, split evenly on ties
inline autograd::Derivative structured_maximum::derivative() {
  using namespace autograd;
  return rule({arg(0, {0, 1}), arg(1, {0, 1}), result(0, {0, 1})}, [](C c) -> G { return extremum_grads(c); });
}
// out = minimum(self, other): the same with the smaller input
inline autograd::Derivative structured_minimum::derivative() {
  using namespace autograd;
  return rule({arg(0, {0, 1}), arg(1, {0, 1}), result(0, {0, 1})}, [](C c) -> G { return extremum_grads(c); });
}
// out = (self == other): a bool mask
inline autograd::Derivative structured_eq::derivative() { return autograd::non_differentiable(); }
// out = where(condition, self, other)
inline autograd::Derivative structured_where::derivative() {
  using namespace autograd;
  return rule({arg(0, {1, 2})}, [](C c) -> G {
    Tensor cond = c.input(0), zero = zeros_like(c.grad());
    return {Tensor(), if_needed(c, 1, [&] { return sum_to(where(cond, c.grad(), zero), c.meta(1)); }),
            if_needed(c, 2, [&] { return sum_to(where(cond, zero, c.grad()), c.meta(2)); })};
  });
}
// out = masked_fill(self, mask, value)
inline autograd::Derivative structured_masked_fill::derivative() {
  using namespace autograd;
  return rule({arg(1, {0})}, [](C c) -> G { return {masked_fill(c.grad(), c.input(1), 0.0), Tensor()}; });
}

// fused backward kernels, differentiated for double backward
// out = grad * (self > threshold)
inline autograd::Derivative structured_threshold_backward::derivative() {
  using namespace autograd;
  return rule({arg(1, {0})}, [](C c) -> G {
    return {if_needed(c, 0, [&] { return threshold_backward(c.grad(), c.input(1), c.scalar(2)); }), Tensor()};
  });
}
// out = grad * y * (1 - y)
inline autograd::Derivative structured_sigmoid_backward::derivative() {
  using namespace autograd;
  return rule({arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
    return {if_needed(c, 0, [&] { return sigmoid_backward(c.grad(), c.input(1)); }),
            if_needed(c, 1, [&] { return mul(mul(c.grad(), c.input(0)), add(mul(c.input(1), -2.0), 1.0)); })};
  });
}
// out = grad * (1 - y^2)
inline autograd::Derivative structured_tanh_backward::derivative() {
  using namespace autograd;
  return rule({arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
    return {if_needed(c, 0, [&] { return tanh_backward(c.grad(), c.input(1)); }),
            if_needed(c, 1, [&] { return mul(mul(c.grad(), c.input(0)), mul(c.input(1), -2.0)); })};
  });
}
// out = grad * s (1 + x (1 - s)),  s = sigmoid(x);  d/dx = grad * s (1 - s) (2 + x (1 - 2 s))
inline autograd::Derivative structured_silu_backward::derivative() {
  using namespace autograd;
  return rule({arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
    return {if_needed(c, 0, [&] { return silu_backward(c.grad(), c.input(1)); }),
            if_needed(c, 1, [&] {
              Tensor g = c.input(0), x = c.input(1), s = sigmoid(x);
              Tensor ds = mul(s, add(neg(s), 1.0));  // s (1 - s)
              return mul(mul(c.grad(), g), mul(ds, add(mul(x, add(mul(s, -2.0), 1.0)), 2.0)));
            })};
  });
}
// out = grad * gelu'(x)
//   none: gelu'(x) = Phi(x) + x phi(x);  gelu''(x) = phi(x) (2 - x^2)
//   tanh: gelu'(x) = (1 + t) / 2 + x (1 - t^2) k' / 2,  t = tanh(k),  k = b (x + a x^3),  k' = b (1 + 3 a x^2)
//         gelu''(x) = (1 - t^2) (k' + x (k'' - 2 t k'^2) / 2),  k'' = 6 a b x
inline autograd::Derivative structured_gelu_backward::derivative() {
  using namespace autograd;
  return rule({arg(0, {1}), arg(1, {0, 1})}, [](C c) -> G {
    const std::string& approximate = c.str(2);
    return {if_needed(c, 0, [&] { return gelu_backward(c.grad(), c.input(1), approximate); }),
            if_needed(c, 1, [&] {
              Tensor g = c.input(0), x = c.input(1), x2 = mul(x, x);
              Tensor second;
              if (approximate == "tanh") {
                const double a = kernels::gelu_constants::kKappa, b = kernels::gelu_constants::kBeta;
                Tensor t = tanh(mul(add(x, mul(mul(x2, x), a)), b));
                Tensor k1 = mul(add(mul(x2, 3.0 * a), 1.0), b);
                Tensor k2 = mul(x, 6.0 * a * b);
                Tensor inner = add(k1, mul(mul(x, sub(k2, mul(mul(t, mul(k1, k1)), 2.0))), 0.5));
                second = mul(add(neg(mul(t, t)), 1.0), inner);
              } else {
                Tensor pdf = mul(exp(mul(x2, -0.5)), kernels::gelu_constants::kInvSqrt2Pi);
                second = mul(pdf, add(neg(x2), 2.0));
              }
              return mul(mul(c.grad(), g), second);
            })};
  });
}

// self += value * t1 * t2
inline autograd::Derivative structured_addcmul_::inplace_derivative() {
  using namespace autograd;
  return rule({arg(1, {2}), arg(2, {1})}, [](C c) -> G {
    double v = c.scalar(3);
    return {c.grad(), if_needed(c, 1, [&] { return sum_to(mul(c.grad(), mul(c.input(2), v)), c.meta(1)); }),
            if_needed(c, 2, [&] { return sum_to(mul(c.grad(), mul(c.input(1), v)), c.meta(2)); })};
  });
}
// self += value * t1 / t2
inline autograd::Derivative structured_addcdiv_::inplace_derivative() {
  using namespace autograd;
  return rule({arg(1, {2}), arg(2, {1, 2})}, [](C c) -> G {
    double v = c.scalar(3);
    return {c.grad(), if_needed(c, 1, [&] { return sum_to(div(mul(c.grad(), v), c.input(2)), c.meta(1)); }),
            if_needed(c, 2, [&] {
              // d/dt2 = -value * t1 / t2^2
              Tensor t2 = c.input(2);
              return sum_to(mul(c.grad(), div(mul(c.input(1), -v), mul(t2, t2))), c.meta(2));
            })};
  });
}
// self = self + weight * (end - self)
inline autograd::Derivative structured_lerp_::inplace_derivative() {
  using namespace autograd;
  return rule({}, [](C c) -> G {
    double w = c.scalar(2);
    return {mul(c.grad(), 1.0 - w), if_needed(c, 1, [&] { return sum_to(mul(c.grad(), w), c.meta(1)); })};
  });
}

// f(structured::DefTag<Def>{}) for each op of the table, in its order: what needs the Defs alone
// (schemas, Meta kernels, tests) iterates them here, not over the table again.
template <class F>
void for_each_pointwise_def(const F& f) {
#define REMAT_UNARY(NAME, ...) f(structured::DefTag<structured_##NAME>{});
#define REMAT_BINARY(NAME, ...) f(structured::DefTag<structured_##NAME>{});
#define REMAT_SCALAR(NAME, ...) f(structured::DefTag<structured_##NAME##_Scalar>{});
#define REMAT_POINTWISE(NAME, ...) f(structured::DefTag<structured_##NAME>{});
#define REMAT_POINTWISE_INPLACE(NAME, ...) f(structured::DefTag<structured_##NAME##_>{});
#include "ops/pointwise.def"
}

}  // namespace remat::ops
