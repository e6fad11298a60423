// Tests ops/structured.h and ops/pointwise.def: every elementwise op of the table gets its schemas
// and its CPU and Meta kernels from its one row, and every backend runs the row's meta function
// (the two defects of the per-backend copies, relu_'s Meta kernel without check_defined and the
// two lists of ops that need a float input, cannot come back).
#include <catch2/catch.hpp>

#include <string>
#include <type_traits>
#include <vector>

#include "remat.h"
#include "ops/pointwise_defs.h"
#include "ops/structured.h"
#include "tests/testing/op_testing.h"
#include "tests/testing/structured_defs.h"

using namespace remat;
using namespace remat::testing;

namespace {

using Unary = Tensor(const Tensor&);
using Binary = Tensor(const Tensor&, const Tensor&);

struct Row {
  std::string name;          // "aten::relu", or empty (addcmul_ has no functional variant)
  std::string inplace_name;  // "aten::relu_", or empty
  bool unary = false;
  bool needs_float = false;
};

template <class Def>
Row row() {
  Row r;
  if constexpr (ops::structured::HasFunctional<Def>::value) r.name = Def::name;
  if constexpr (ops::structured::HasInplace<Def>::value) r.inplace_name = Def::inplace_name;
  if constexpr (std::is_same_v<typename Def::Sig, Unary>) {
    r.unary = true;
    r.needs_float = Def::needs_float;
  }
  return r;
}

const std::vector<Row>& table() {
  static const std::vector<Row> rows = [] {
    std::vector<Row> v;
    ops::for_each_pointwise_def([&](auto def) { v.push_back(row<typename decltype(def)::type>()); });
    return v;
  }();
  return rows;
}

}  // namespace

TEST_CASE("every op of ops/pointwise.def has its schemas and CPU and Meta kernels", "[pointwise][structured]") {
  REQUIRE(table().size() == 34);
  int inplace = 0;
  for (const Row& r : table()) {
    INFO(r.name << " " << r.inplace_name);
    if (!r.name.empty()) {
      OperatorHandle op = find_op(r.name);
      CHECK(op.has_tag(Tag::pointwise));
      CHECK(op.entry()->hasKernelForKey(DispatchKey::CPU));
      CHECK(op.entry()->hasKernelForKey(DispatchKey::Meta));
    }
    if (r.inplace_name.empty()) continue;
    ++inplace;
    OperatorHandle in = find_op(r.inplace_name);
    CHECK(in.schema().str().find("Tensor(a!) self") != std::string::npos);
    CHECK(in.entry()->hasKernelForKey(DispatchKey::CPU));
    CHECK(in.entry()->hasKernelForKey(DispatchKey::Meta));
  }
  CHECK(inplace == 8);  // add_, mul_, add_.Scalar, mul_.Scalar, relu_; addcmul_, addcdiv_, lerp_.Scalar
}

TEST_CASE("relu_ on an undefined tensor: the Meta kernel raises the CPU kernel's error", "[pointwise][structured]") {
  // Before: relu_'s Meta kernel skipped check_defined (the CPU and CUDA kernels had it).
  auto op = find_op("aten::relu_").typed<Unary>();
  const std::string on_cpu = error_of([&] { op.redispatch(DispatchKeySet(DispatchKey::CPU), Tensor()); });
  const std::string on_meta = error_of([&] { op.redispatch(DispatchKeySet(DispatchKey::Meta), Tensor()); });
  CHECK(on_cpu == "aten::relu_: argument 'self' is an undefined tensor");
  CHECK(on_meta == on_cpu);
}

TEST_CASE("needs_float: the table's column decides, on CPU and Meta alike, which unary ops refuse integers",
          "[pointwise][structured]") {
  int refused = 0;
  for (const Row& r : table()) {
    if (!r.unary) continue;
    INFO(r.name);
    auto op = find_op(r.name).typed<Unary>();
    const std::string on_cpu = error_of([&] { op.call(ones({3}, kLong)); });
    const std::string on_meta = error_of([&] { op.call(meta({3}, kLong)); });
    CHECK(on_meta == on_cpu);
    if (r.needs_float) {
      ++refused;
      CHECK_THAT(on_cpu, Catch::Contains(r.name) && Catch::Contains("Long"));
    } else {
      CHECK(on_cpu.empty());
    }
    if (!r.inplace_name.empty()) {  // the in-place variant follows the same column
      auto in = find_op(r.inplace_name).typed<Unary>();
      Tensor c = ones({3}, kLong), m = meta({3}, kLong);
      CHECK(error_of([&] { in.call(c); }) == error_of([&] { in.call(m); }));
    }
  }
  CHECK(refused == 9);  // all but neg, relu, abs
}

TEST_CASE("the fused backward kernels refuse integer inputs on Meta as on CPU, naming the op",
          "[pointwise][structured]") {
  // Before: their Meta kernels checked nothing of the dtype, and named the op "backward".
  for (const char* name : {"aten::sigmoid_backward", "aten::tanh_backward", "aten::silu_backward"}) {
    INFO(name);
    auto op = find_op(name).typed<Binary>();
    const std::string on_cpu = error_of([&] { op.call(ones({2}, kLong), ones({2}, kLong)); });
    const std::string on_meta = error_of([&] { op.call(meta({2}, kLong), meta({2}, kLong)); });
    CHECK(on_cpu == std::string("\"") + name + "\" not implemented for 'Long'");
    CHECK(on_meta == on_cpu);
    CHECK_THAT(error_of([&] { op.call(meta({2}), meta({3})); }), Catch::Contains(name));
  }
}
