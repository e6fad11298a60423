// Mirrors test/test_type_promotion.py.
// Tests engine/core/scalar_type.h (element sizes, names, type promotion).
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

TEST_CASE("ScalarType sizes and names", "[scalar_type]") {
  REQUIRE(elementSize(kFloat) == 4);
  REQUIRE(elementSize(kDouble) == 8);
  REQUIRE(elementSize(kBFloat16) == 2);
  REQUIRE(elementSize(kHalf) == 2);
  REQUIRE(elementSize(kLong) == 8);
  REQUIRE(elementSize(kBool) == 1);
  REQUIRE(std::string(toString(kBFloat16)) == "BFloat16");
  REQUIRE(std::string(toString(kLong)) == "Long");
  REQUIRE(isFloatingType(kHalf));
  REQUIRE_FALSE(isFloatingType(kLong));
  REQUIRE_FALSE(isFloatingType(kBool));
}

TEST_CASE("promoteTypes follows PyTorch's table", "[scalar_type]") {
  REQUIRE(promoteTypes(kFloat, kDouble) == kDouble);
  REQUIRE(promoteTypes(kHalf, kFloat) == kFloat);
  REQUIRE(promoteTypes(kBFloat16, kHalf) == kFloat);  // neither holds the other
  REQUIRE(promoteTypes(kBFloat16, kLong) == kBFloat16);
  REQUIRE(promoteTypes(kLong, kHalf) == kHalf);
  REQUIRE(promoteTypes(kLong, kBool) == kLong);
  REQUIRE(promoteTypes(kBool, kBool) == kBool);
  // Symmetric.
  const ScalarType all[] = {kFloat, kDouble, kBFloat16, kHalf, kLong, kBool};
  for (ScalarType a : all)
    for (ScalarType b : all) REQUIRE(promoteTypes(a, b) == promoteTypes(b, a));
}
