// Mirrors c10/test/util/small_vector_test.cpp.
// Tests engine/core/small_shape.h (a shape stored inline up to kInline dims).
#include <catch2/catch.hpp>

#include "engine/core/small_shape.h"

using remat::SmallShape;

TEST_CASE("SmallShape round-trips shapes inline and on the heap", "[small_shape]") {
  for (const std::vector<int64_t>& s : {std::vector<int64_t>{}, std::vector<int64_t>{3},
                                        std::vector<int64_t>{1, 2, 3, 4, 5, 6},
                                        std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}}) {
    SmallShape small(s);
    REQUIRE(small.size() == s.size());
    REQUIRE(small.empty() == s.empty());
    REQUIRE(small == s);
    REQUIRE(s == small);
    REQUIRE(small.vec() == s);
    SmallShape copy = small;
    REQUIRE(copy == s);
    SmallShape assigned;
    assigned = small;
    REQUIRE(assigned == s);
    for (size_t i = 0; i < s.size(); ++i) REQUIRE(small[i] == s[i]);
  }
  SmallShape a(std::vector<int64_t>{2, 3});
  REQUIRE(a != std::vector<int64_t>{2, 4});
  REQUIRE(a != std::vector<int64_t>{2, 3, 1});
  // Reassigning from heap to inline storage.
  SmallShape b(std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7});
  b = a;
  REQUIRE(b == std::vector<int64_t>{2, 3});
}
