// Tests engine/core/safe_numerics.h (c10/util/safe_numerics.h): products and sums of sizes checked
// for int64 overflow, and the engine's tensor sizes and byte counts that use them.
#include <catch2/catch.hpp>

#include <limits>

#include "remat.h"

using namespace remat;
using Catch::Matchers::Contains;

TEST_CASE("mul_overflows and add_overflows say when int64 cannot hold the result", "[safe_numerics]") {
  int64_t out = 0;
  CHECK_FALSE(mul_overflows(3037000499, 3037000499, &out));
  CHECK(out == 9223372030926249001);
  CHECK(mul_overflows(3037000500, 3037000500, &out));
  CHECK(add_overflows(std::numeric_limits<int64_t>::max(), 1, &out));
  CHECK_FALSE(add_overflows(std::numeric_limits<int64_t>::max(), -1, &out));
}

TEST_CASE("checked_product and checked_sum name the figure that overflowed", "[safe_numerics]") {
  CHECK(checked_product("bytes", {4, 1000, 1000}) == 4000000);
  CHECK(checked_sum("bytes", {1, 2, 3}) == 6);
  REQUIRE_THROWS_WITH(checked_product("the parameters", {4, 4000000000, 4000000000}),
                      "the parameters: 4 * 4000000000 * 4000000000 overflows int64");
  REQUIRE_THROWS_WITH(checked_sum("the total", {std::numeric_limits<int64_t>::max(), 1}),
                      "the total: 9223372036854775807 + 1 overflows int64");
}

TEST_CASE("empty refuses a shape whose elements or bytes overflow int64, even on Meta", "[safe_numerics]") {
  const TensorOptions meta = TensorOptions().device(Device{kMeta});
  REQUIRE_THROWS_WITH(empty({4000000000, 4000000000, 4000000000}, meta),
                      "shape [4000000000, 4000000000, 4000000000]: the contiguous strides overflow int64");
  REQUIRE_THROWS_WITH(make_empty_strided({4000000000, 4000000000}, {4000000000, 4000000000}, kFloat, Device{kMeta}),
                      "empty: a tensor of shape [4000000000, 4000000000] needs more elements than int64 counts");
  REQUIRE_THROWS_WITH(empty({3000000000, 3000000000}, meta),
                      Contains("empty: a tensor of shape [3000000000, 3000000000] and dtype Float needs more bytes than "
                               "int64 counts (9000000000000000000 elements of 4 bytes)"));
  CHECK(empty({3000000000, 3000000000}, meta.dtype(kBool)).numel() == 9000000000000000000);
  REQUIRE_THROWS_WITH(shape_numel({4000000000, 4000000000, 4000000000}),
                      "shape [4000000000, 4000000000, 4000000000]: the number of elements overflows int64");
}
