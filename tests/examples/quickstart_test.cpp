// Tests examples/quickstart.cpp's main (no PyTorch counterpart): it runs under run_main, so a full
// disk for stdout is a failed run with one line, exit 1 (it used to exit 0, its output lost).
#include <catch2/catch.hpp>

#include "tests/tools/tool_runner.h"

using remat::testing::run_binary;

TEST_CASE("quickstart: a full disk for stdout is a failed run, one line, exit 1", "[examples][cli]") {
  const auto r = run_binary("examples/quickstart", "", 120, "/dev/full");
  CHECK(r.status == 1);
  CHECK(r.err == "error: cannot write standard output: No space left on device\n");
}

TEST_CASE("quickstart runs and exits 0", "[examples][cli]") {
  const auto r = run_binary("examples/quickstart", "", 120);
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Matchers::Contains("step 2  loss ") && Catch::Matchers::Contains("sum of grad of w1: "));
}
