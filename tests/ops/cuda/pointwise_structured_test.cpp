// Tests the CUDA kernels of ops/pointwise.def: they run the table's meta function, so every error
// is the CPU kernel's, word for word (relu_ on an undefined tensor, the needs_float column, the
// fused backward kernels' dtype: tests/ops/pointwise_structured_test.cpp checks CPU and Meta
// give these messages), and every row and its in-place variant has a CUDA kernel.
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>

#include "remat.h"
#include "ops/pointwise_defs.h"
#include "ops/structured.h"
#include "tests/testing/cuda.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("every row of ops/pointwise.def has CUDA kernels, its in-place variant too", "[cuda][pointwise][structured]") {
  int rows = 0;
  ops::for_each_pointwise_def([&](auto def) {
    using Def = typename decltype(def)::type;
    ++rows;
    if constexpr (ops::structured::HasFunctional<Def>::value) {
      INFO(Def::name);
      CHECK(find_op(Def::name).entry()->hasKernelForKey(DispatchKey::CUDA));
    }
    if constexpr (ops::structured::HasInplace<Def>::value) {
      INFO(Def::inplace_name);
      CHECK(find_op(Def::inplace_name).entry()->hasKernelForKey(DispatchKey::CUDA));
    }
  });
  CHECK(rows == 34);
}

TEST_CASE("CUDA kernels of the table raise the CPU kernels' errors", "[cuda][pointwise][structured]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor l = ones({3}, kLong).to(cuda0());
  SECTION("relu_ on an undefined tensor") {
    auto op = find_op("aten::relu_").typed<Tensor(const Tensor&)>();
    CHECK_THROWS_WITH(op.redispatch(DispatchKeySet(DispatchKey::CUDA), Tensor()),
                      "aten::relu_: argument 'self' is an undefined tensor");
  }
  SECTION("needs_float: integer inputs to the unary ops") {
    ops::for_each_pointwise_def([&](auto def) {
      using Def = typename decltype(def)::type;
      if constexpr (std::is_same_v<typename Def::Sig, Tensor(const Tensor&)>) {
        INFO(Def::name);
        auto op = find_op(Def::name).template typed<Tensor(const Tensor&)>();
        if (Def::needs_float) {
          CHECK_THROWS_WITH(op.call(l), std::string(Def::name) +
                                            ": expected 'self' to have a floating point dtype, but got Long");
        } else {
          CHECK_NOTHROW(op.call(l));
        }
      }
    });
  }
  SECTION("the fused backward kernels on integer inputs") {
    for (const char* name : {"aten::sigmoid_backward", "aten::tanh_backward", "aten::silu_backward"}) {
      auto op = find_op(name).typed<Tensor(const Tensor&, const Tensor&)>();
      CHECK_THROWS_WITH(op.call(l, l), std::string("\"") + name + "\" not implemented for 'Long'");
    }
  }
}
