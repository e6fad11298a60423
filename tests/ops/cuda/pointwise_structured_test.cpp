// Tests the CUDA kernels of ops/pointwise.def: they run the table's meta function, so every error
// is the CPU kernel's, word for word (relu_ on an undefined tensor, the needs_float column, the
// fused backward kernels' dtype), and every row and its in-place variant has a CUDA kernel.
#include <catch2/catch.hpp>

#include <string>

#include "remat.h"
#include "ops/pointwise_defs.h"
#include "ops/structured.h"
#include "tests/testing/cuda.h"

using namespace remat;
using namespace remat::testing;

namespace {

template <class F>
std::string error_of(const F& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

using Unary = Tensor(const Tensor&);
using Binary = Tensor(const Tensor&, const Tensor&);

template <class Def>
void check_cuda_kernels() {
  if constexpr (ops::structured::HasFunctional<Def>::value) {
    INFO(Def::name);
    CHECK(find_op(Def::name).entry()->hasKernelForKey(DispatchKey::CUDA));
  }
  if constexpr (ops::structured::HasInplace<Def>::value) {
    INFO(Def::inplace_name);
    CHECK(find_op(Def::inplace_name).entry()->hasKernelForKey(DispatchKey::CUDA));
  }
}

// A unary row: CUDA refuses what CPU refuses, with CPU's message (and accepts what CPU accepts).
template <class Def>
void check_unary_dtypes() {
  INFO(Def::name);
  auto op = find_op(Def::name).template typed<Unary>();
  Tensor l = ones({3}, kLong);
  const std::string on_cpu = error_of([&] { op.call(l); });
  CHECK(error_of([&] { op.call(l.to(cuda0())); }) == on_cpu);
  CHECK(on_cpu.empty() == !Def::needs_float);
}

}  // namespace

TEST_CASE("every row of ops/pointwise.def has CUDA kernels, its in-place variant too", "[cuda][pointwise][structured]") {
#define REMAT_UNARY(NAME, ...) check_cuda_kernels<ops::structured_##NAME>();
#define REMAT_BINARY(NAME, ...) check_cuda_kernels<ops::structured_##NAME>();
#define REMAT_SCALAR(NAME, ...) check_cuda_kernels<ops::structured_##NAME##_Scalar>();
#define REMAT_POINTWISE(NAME, ...) check_cuda_kernels<ops::structured_##NAME>();
#define REMAT_POINTWISE_INPLACE(NAME, ...) check_cuda_kernels<ops::structured_##NAME##_>();
#include "ops/pointwise.def"
}

TEST_CASE("CUDA kernels of the table raise the CPU kernels' errors", "[cuda][pointwise][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  SECTION("relu_ on an undefined tensor") {
    auto op = find_op("aten::relu_").typed<Unary>();
    const std::string on_cpu = error_of([&] { op.redispatch(DispatchKeySet(DispatchKey::CPU), Tensor()); });
    CHECK(on_cpu == "aten::relu_: argument 'self' is an undefined tensor");
    CHECK(error_of([&] { op.redispatch(DispatchKeySet(DispatchKey::CUDA), Tensor()); }) == on_cpu);
  }
  SECTION("needs_float: integer inputs to the unary ops") {
#define REMAT_UNARY(NAME, ...) check_unary_dtypes<ops::structured_##NAME>();
#define REMAT_BINARY(NAME, ...)
#define REMAT_SCALAR(NAME, ...)
#define REMAT_POINTWISE(NAME, ...)
#define REMAT_POINTWISE_INPLACE(NAME, ...)
#include "ops/pointwise.def"
  }
  SECTION("the fused backward kernels on integer inputs") {
    for (const char* name : {"aten::sigmoid_backward", "aten::tanh_backward", "aten::silu_backward"}) {
      INFO(name);
      auto op = find_op(name).typed<Binary>();
      Tensor l = ones({2}, kLong);
      const std::string on_cpu = error_of([&] { op.call(l, l); });
      CHECK(on_cpu == std::string("\"") + name + "\" not implemented for 'Long'");
      CHECK(error_of([&] { op.call(l.to(cuda0()), l.to(cuda0())); }) == on_cpu);
    }
  }
}
