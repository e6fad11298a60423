// Tests bench/ops.cpp's main (no PyTorch counterpart): bad flags are refused with one line naming
// the flag and the value, exit 2, at once (a huge --threads used to hang starting threads).
#include <catch2/catch.hpp>

#include "tests/tools/tool_runner.h"

using remat::testing::run_binary;
using Catch::Matchers::Contains;

TEST_CASE("bench/ops refuses bad numbers and flags with one line, exit 2", "[bench][cli]") {
  struct Case {
    const char* args;
    const char* error;
  };
  const Case cases[] = {
      {"--threads 99999999999", "error: --threads: expected an integer from 1 to 4096, got '99999999999'\n"},
      {"--threads 0", "error: --threads: expected an integer from 1 to 4096, got '0'\n"},
      {"--threads 4x", "error: --threads: expected an integer from 1 to 4096, got '4x'\n"},
      {"--threads ''", "error: --threads: expected an integer from 1 to 4096, got ''\n"},
      {"--threads", "error: missing value for --threads (usage: ops [--quick] [--threads N] [--clock wall|cpu])\n"},
      {"--clock sundial", "error: --clock must be wall or cpu, got 'sundial' (usage: ops [--quick] [--threads N] "
                          "[--clock wall|cpu])\n"},
      {"--fast", "error: unknown flag '--fast' (usage: ops [--quick] [--threads N] [--clock wall|cpu])\n"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const auto r = run_binary("bench/ops", c.args, 30);
    CHECK(r.status == 2);
    CHECK(r.err == c.error);
    CHECK(r.out.empty());
  }
}

TEST_CASE("bench/ops --help prints the flags, exit 0", "[bench][cli]") {
  const auto r = run_binary("bench/ops", "--help", 30);
  CHECK(r.status == 0);
  CHECK_THAT(r.out, Contains("--threads N (1 to 4096)"));
}

TEST_CASE("bench/ops: a full disk for stdout is a failed run, one line, exit 1", "[bench][cli]") {
  const auto r = run_binary("bench/ops", "--help", 30, "/dev/full");
  CHECK(r.status == 1);
  CHECK(r.err == "error: cannot write standard output: No space left on device\n");
}
