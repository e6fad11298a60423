// Tests engine/autograd/ops_by_name.cpp (the ops the engine calls by name, through the dispatcher).
#include <catch2/catch.hpp>

#include "engine/autograd/ops_by_name.h"
#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
namespace by_name = remat::autograd::ops_by_name;
using remat::testing::CountingMode;
using remat::testing::values;

TEST_CASE("The engine's ops go through the dispatcher under their aten names", "[ops_by_name]") {
  Tensor a = from_vector({1, 2, 3, 4}, {2, 2}, kDouble);
  Tensor b = from_vector({10, 20, 30, 40}, {2, 2}, kDouble);
  Tensor c = a.clone();
  auto mode = std::make_shared<CountingMode>();
  DispatchModeGuard g(mode);
  using Calls = std::vector<std::string>;
  Tensor r;

  r = by_name::add(a, b);
  REQUIRE(mode->calls == Calls{"aten::add"});
  REQUIRE(values(r) == std::vector<double>{11, 22, 33, 44});
  mode->clear();
  by_name::add_(c, b);
  REQUIRE(mode->calls == Calls{"aten::add_"});
  REQUIRE(values(c) == std::vector<double>{11, 22, 33, 44});
  mode->clear();
  r = by_name::ones_like(a);
  REQUIRE(mode->calls == Calls{"aten::ones_like"});
  REQUIRE(values(r) == std::vector<double>{1, 1, 1, 1});
  mode->clear();
  r = by_name::zeros_like(a);
  REQUIRE(mode->calls == Calls{"aten::zeros_like"});
  REQUIRE(values(r) == std::vector<double>{0, 0, 0, 0});
  mode->clear();
  r = by_name::clone(a);
  REQUIRE(mode->calls == Calls{"aten::clone"});
  REQUIRE_FALSE(r.is_alias_of(a));
  mode->clear();
  r = by_name::to_dtype(a, kFloat);
  REQUIRE(mode->calls == Calls{"aten::_to_copy"});
  REQUIRE(r.dtype() == kFloat);
  REQUIRE(values(r) == values(a));
  mode->clear();
  r = by_name::sum_to_size(a, {1, 2});  // a composite: the mode sees what it is made of
  REQUIRE(mode->count("aten::sum") == 1);
  REQUIRE(mode->count("aten::sum_to_size") == 0);
  REQUIRE(values(r) == std::vector<double>{4, 6});
}
