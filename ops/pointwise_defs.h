// Mirrors torchgen's generated NativeMetaFunctions.h (at::meta::structured_sigmoid, ...): one
// struct per elementwise op of ops/pointwise.def, with its name, schemas, C++ signature and meta
// function, in the form ops/structured.h reads (a Def). Every backend includes this one header,
// so the op's name and checks exist once.
#pragma once

#include <string>

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
    REMAT_VARIANT_##VARIANTS(                                                                        \
        static constexpr const char* inplace_name = "aten::" #NAME "_";                              \
        static constexpr const char* inplace_schema = "(Tensor(a!) self) -> Tensor(a!)";             \
        static void inplace_meta(const char* op, const Tensor& self) { check_inplace_result(op, self, meta(op, self)); }) \
  };

#define REMAT_BINARY(NAME, META, CPU_OP, CUDA_OP, VARIANTS)                                             \
  struct structured_##NAME {                                                                         \
    using Sig = Tensor(const Tensor&, const Tensor&);                                                \
    static constexpr const char* name = "aten::" #NAME;                                              \
    static constexpr const char* schema = "(Tensor self, Tensor other) -> Tensor";                   \
    static TensorMeta meta(const char* op, const Tensor& self, const Tensor& other) { return META(op, self, other); } \
    REMAT_VARIANT_##VARIANTS(                                                                        \
        static constexpr const char* inplace_name = "aten::" #NAME "_";                              \
        static constexpr const char* inplace_schema = "(Tensor(a!) self, Tensor other) -> Tensor(a!)"; \
        static void inplace_meta(const char* op, const Tensor& self, const Tensor& other) {          \
          check_inplace_result(op, self, meta(op, self, other));                                     \
        })                                                                                           \
  };

#define REMAT_SCALAR(NAME, META, CPU_OP, CUDA_OP, VARIANTS)                                             \
  struct structured_##NAME##_Scalar {                                                                \
    using Sig = Tensor(const Tensor&, double);                                                       \
    static constexpr const char* name = "aten::" #NAME ".Scalar";                                    \
    static constexpr const char* schema = "(Tensor self, float other) -> Tensor";                    \
    static TensorMeta meta(const char* op, const Tensor& self, double other) { return META(op, self, other); } \
    REMAT_VARIANT_##VARIANTS(                                                                        \
        static constexpr const char* inplace_name = "aten::" #NAME "_.Scalar";                       \
        static constexpr const char* inplace_schema = "(Tensor(a!) self, float other) -> Tensor(a!)"; \
        static void inplace_meta(const char* op, const Tensor& self, double other) {                 \
          check_inplace_scalar(op, self, other);                                                     \
        })                                                                                           \
  };

#define REMAT_POINTWISE(NAME, SCHEMA, SIGNATURE, META, CPU_IMPL, CUDA_IMPL) \
  struct structured_##NAME {                                              \
    using Sig = Tensor SIGNATURE;                                         \
    static constexpr const char* name = "aten::" #NAME;                   \
    static constexpr const char* schema = SCHEMA;                         \
    static constexpr auto meta = &META;                                   \
  };

#define REMAT_POINTWISE_INPLACE(NAME, OVERLOAD, SCHEMA, SIGNATURE, META, CPU_IMPL, CUDA_IMPL) \
  struct structured_##NAME##_ {                                                                 \
    using Sig = Tensor SIGNATURE;                                                               \
    static constexpr const char* inplace_name = "aten::" #NAME "_" OVERLOAD;                    \
    static constexpr const char* inplace_schema = SCHEMA;                                       \
    static constexpr auto inplace_meta = &META;                                                 \
  };

#include "ops/pointwise.def"

#undef REMAT_VARIANT_INPLACE
#undef REMAT_VARIANT_NO_INPLACE

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
