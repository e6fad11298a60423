// Tests examples/plan_budget.cpp's main (no PyTorch counterpart): its one argument, the budget in
// MiB, read strictly (it used to be atof: "abc" planned for 0 bytes).
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
