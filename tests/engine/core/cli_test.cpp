// Tests engine/core/cli.h (no PyTorch counterpart): flags' numbers read strictly, each refusal one
// line naming the flag, the value and what is allowed; run_main's exit statuses.
#include <catch2/catch.hpp>

#include <limits>
#include <new>

#include "remat.h"  // the umbrella header reaches cli.h

using namespace remat;
using Catch::Matchers::Contains;

TEST_CASE("parse_int reads the whole text in decimal, in range", "[cli]") {
  CHECK(parse_int("--steps", "5", 1) == 5);
  CHECK(parse_int("--warmup", "0", 0) == 0);
  CHECK(parse_int("--x", "-7", -10, 10) == -7);
  CHECK(parse_int("--x", "9223372036854775807", 0) == std::numeric_limits<int64_t>::max());
  CHECK(parse_int("--x", "-9223372036854775808", std::numeric_limits<int64_t>::min()) ==
        std::numeric_limits<int64_t>::min());
}

TEST_CASE("parse_int refuses text that is not a whole integer, never wrapping or saturating", "[cli]") {
  for (const char* bad : {"", "-", "5x", " 5", "5 ", "+5", "0x10", "1e3", "2.0", "ten"})
    REQUIRE_THROWS_WITH(parse_int("--steps", bad, 1),
                        std::string("--steps: expected an integer >= 1, got '") + bad + "'");
  REQUIRE_THROWS_WITH(parse_int("--threads", "99999999999", 1, 4096),
                      "--threads: expected an integer from 1 to 4096, got '99999999999'");
  REQUIRE_THROWS_WITH(parse_int("--embd", "9223372036854775808", 1),
                      "--embd: expected an integer >= 1, got '9223372036854775808'");
  REQUIRE_THROWS_WITH(parse_int("--embd", "99999999999999999999999", 1),
                      "--embd: expected an integer >= 1, got '99999999999999999999999'");
  REQUIRE_THROWS_WITH(parse_int("--batch", "0", 1), "--batch: expected an integer >= 1, got '0'");
  REQUIRE_THROWS_AS(parse_int("--batch", "0", 1), UsageError);
  // A huge argument is quoted in part: the refusal stays one short line.
  REQUIRE_THROWS_WITH(parse_int("--steps", std::string(100000, '9'), 1),
                      "--steps: expected an integer >= 1, got '" + std::string(57, '9') + "...' (100000 characters)");
}

TEST_CASE("parse_float reads finite decimal numbers in range", "[cli]") {
  CHECK(parse_float("--lr", "3e-4", 0, 10) == 3e-4);
  CHECK(parse_float("--lr", "0.5", 0, 10) == 0.5);
  CHECK(parse_float("--lr", ".5", 0, 10) == 0.5);
  CHECK(parse_float("--lr", "10", 0, 10) == 10);
  CHECK(parse_float("--x", "-1.5E2", -1000, 0) == -150);
  CHECK(decimal_prefix("40MiB") == 2);
  CHECK(decimal_prefix("1.5e3x") == 5);
  CHECK(decimal_prefix("1e") == 1);
  CHECK(decimal_prefix("inf") == 0);
}

TEST_CASE("parse_float refuses what is not a finite number in range", "[cli]") {
  for (const char* bad : {"abc", "", "inf", "-inf", "nan", "0x1p3", "1e999", " 1", "1 ", "1.5x", "."})
    REQUIRE_THROWS_WITH(parse_float("--lr", bad, 0, 10),
                        std::string("--lr: expected a finite number from 0 to 10, got '") + bad + "'");
  REQUIRE_THROWS_WITH(parse_float("--lr", "11", 0, 10), "--lr: expected a finite number from 0 to 10, got '11'");
  REQUIRE_THROWS_WITH(parse_float("--lr", "1e30", 0, 10, "a number > 0 and <= 10"),
                      "--lr: expected a number > 0 and <= 10, got '1e30'");
  REQUIRE_THROWS_AS(parse_float("--lr", "abc", 0, 10), UsageError);
}

TEST_CASE("run_main: the body's status; what it throws as one line and exit 2 or 1", "[cli]") {
  CHECK(run_main([] { return 0; }) == 0);
  CHECK(run_main([] { return 3; }) == 3);
  CHECK(run_main([]() -> int { throw UsageError("--x: expected an integer >= 1, got 'y'"); }) == 2);
  CHECK(run_main([]() -> int { throw Error("the loss became nan\nat step 3"); }) == 1);
  CHECK(run_main([]() -> int { throw std::bad_alloc(); }) == 1);
  CHECK(run_main([]() -> int { throw 42; }) == 1);
}
