// Tests bench/dispatch_overhead.cpp's main (no PyTorch counterpart): a missing libtorch peer and bad
// --count values are refused with one line, exit 2, before anything is timed (the peer used to
// abort on an uncaught remat::Error).
#include <catch2/catch.hpp>

#include "tests/tools/tool_runner.h"

using remat::testing::run_binary;

TEST_CASE("bench/dispatch_overhead refuses a missing peer and bad --count values with one line, exit 2",
          "[bench][cli]") {
  struct Case {
    const char* args;
    const char* error;
  };
  const Case cases[] = {
      {"--libtorch /nonexistent/bin", "error: --libtorch: '/nonexistent/bin' is not an executable file (No such file "
                                      "or directory; build it with tools/dispatch_libtorch.sh)\n"},
      {"--count grad 1x", "error: --count: expected an integer >= 0, got '1x'\n"},
      {"--count grad -5", "error: --count: expected an integer >= 0, got '-5'\n"},
      {"--count grad 99999999999999999999", "error: --count: expected an integer >= 0, got '99999999999999999999'\n"},
      {"--count sideways 3", "error: --count: unknown case 'sideways' (plain, grad, mode, mode_grad, hook, hook_grad)\n"},
      {"--bogus", "error: unknown or incomplete flag '--bogus' (usage: dispatch_overhead [--libtorch BIN]...  (BIN: "
                  "see tools/dispatch_libtorch.sh) | --count CASE N)\n"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const auto r = run_binary("bench/dispatch_overhead", c.args, 30);
    CHECK(r.status == 2);
    CHECK(r.err == c.error);
    CHECK(r.out.empty());
  }
}

TEST_CASE("bench/dispatch_overhead --count runs the case, exit 0", "[bench][cli]") {
  const auto r = run_binary("bench/dispatch_overhead", "--count mode_grad 100", 30);
  CHECK(r.status == 0);
  CHECK(r.err.empty());
}

// The whole benchmark (its figures are what reaches stdout) takes minutes under AddressSanitizer;
// run_main's check of stdout runs under it in the other programs' tests.
#if !defined(__SANITIZE_ADDRESS__)
TEST_CASE("bench/dispatch_overhead: a full disk for stdout is a failed run, one line, exit 1", "[bench][cli]") {
  const auto r = run_binary("bench/dispatch_overhead", "", 120, "/dev/full");
  CHECK(r.status == 1);
  CHECK(r.err == "error: cannot write standard output: No space left on device\n");
}
#endif
