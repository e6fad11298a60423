// Tests examples/plan_budget.cpp's main (no PyTorch counterpart): its one argument, the budget in
// MiB, read strictly (it used to be atof: "abc" planned for 0 bytes); a budget no plan reaches is
// bad usage; a full disk for stdout is a failed run (run_main, engine/core/cli.h).
#include <catch2/catch.hpp>

#include "tests/tools/tool_runner.h"

using remat::testing::run_binary;

TEST_CASE("plan_budget refuses a budget that is not a number of MiB in range, exit 2", "[examples][cli]") {
  for (const char* bad : {"abc", "inf", "0", "1e30", "9MiB"}) {
    INFO(bad);
    const auto r = run_binary("examples/plan_budget", bad, 30);
    CHECK(r.status == 2);
    CHECK(r.err == std::string("error: BUDGET_MIB: expected a number of MiB from 0.001 to 1048576, got '") + bad + "'\n");
  }
  const auto r = run_binary("examples/plan_budget", "9 10", 30);
  CHECK(r.status == 2);
  CHECK(r.err == "error: expected at most one argument, the budget in MiB (default 9), got 2\n");
}

TEST_CASE("plan_budget: a budget below every plan's peak is bad usage, one line, exit 2", "[examples][cli]") {
  const auto r = run_binary("examples/plan_budget", "0.001", 120);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Catch::Matchers::StartsWith("error: plan_checkpointing: no plan fits a budget of 1048 bytes: the "
                                                "minimum feasible peak is "));
  CHECK(r.err.find('\n') == r.err.size() - 1);  // one line
}

TEST_CASE("plan_budget: a full disk for stdout is a failed run, one line, exit 1", "[examples][cli]") {
  const auto r = run_binary("examples/plan_budget", "", 300, "/dev/full");
  CHECK(r.status == 1);
  CHECK(r.err == "error: cannot write standard output: No space left on device\n");
}
