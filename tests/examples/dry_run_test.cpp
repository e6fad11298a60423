// Tests examples/dry_run.cpp's main (no PyTorch counterpart): it runs under run_main, so a full
// disk for stdout is a failed run with one line, exit 1 (it used to exit 0, its output lost).
#include <catch2/catch.hpp>

#include "tests/tools/tool_runner.h"

using remat::testing::run_binary;

TEST_CASE("dry_run: a full disk for stdout is a failed run, one line, exit 1", "[examples][cli]") {
  const auto r = run_binary("examples/dry_run", "", 120, "/dev/full");
  CHECK(r.status == 1);
  CHECK(r.err == "error: cannot write standard output: No space left on device\n");
}

TEST_CASE("dry_run predicts both steps and exits 0", "[examples][cli]") {
  const auto r = run_binary("examples/dry_run", "", 120);
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK_THAT(r.out, Catch::Matchers::StartsWith("step 1: peak ") && Catch::Matchers::Contains("\nstep 2: peak "));
}
