// Mirrors c10/test/util/exception_test.cpp.
// Tests engine/core/error.h (remat::Error, REMAT_CHECK message formatting, internal asserts).
#include <catch2/catch.hpp>

#include <stdexcept>

#include "engine/core/error.h"

// REMAT_CHECK is a statement; these wrap it as an expression for REQUIRE_THROWS_*.
#define AS_EXPR(...) [&] { __VA_ARGS__; }()

TEST_CASE("REMAT_CHECK throws remat::Error with the parts concatenated; shapes print like PyTorch", "[error]") {
  std::vector<int64_t> shape = {2, 3};
  REQUIRE_NOTHROW(AS_EXPR(REMAT_CHECK(1 + 1 == 2, "never")));
  REQUIRE_THROWS_AS(AS_EXPR(REMAT_CHECK(false, "x")), remat::Error);
  REQUIRE_THROWS_AS(AS_EXPR(REMAT_CHECK(false, "x")), std::runtime_error);
  REQUIRE_THROWS_WITH(AS_EXPR(REMAT_CHECK(shape.size() == 3, "aten::mm: expected 3 dims, got ", shape.size(),
                                          " (shape ", shape, ", scale ", 0.5, ")")),
                      "aten::mm: expected 3 dims, got 2 (shape [2, 3], scale 0.5)");
  REQUIRE_THROWS_WITH(AS_EXPR(REMAT_CHECK(false, "empty shape ", std::vector<int64_t>{})), "empty shape []");
}

TEST_CASE("REMAT_INTERNAL_ASSERT names the file, line and condition", "[error]") {
  REQUIRE_THROWS_WITH(AS_EXPR(REMAT_INTERNAL_ASSERT(2 < 1, "extra ", 7)),
                      Catch::StartsWith("internal assert failed at tests/engine/core/error_test.cpp:") &&
                          Catch::EndsWith(": 2 < 1 extra 7"));
  // The condition is evaluated once.
  int calls = 0;
  REMAT_CHECK(++calls == 1, "evaluated twice");
  REQUIRE(calls == 1);
}
