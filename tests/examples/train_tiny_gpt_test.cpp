// Tests examples/train_tiny_gpt.cpp's main (no PyTorch counterpart): bad numbers and paths refused
// with one line, exit 2 (a folder for --data used to abort); a full disk for stdout, exit 1.
#include <catch2/catch.hpp>

#include <fstream>
#include <sys/stat.h>

#include "tests/tools/tool_runner.h"

using remat::testing::run_binary;
using remat::testing::test_dir;

TEST_CASE("train_tiny_gpt refuses bad numbers and paths with one line, exit 2", "[examples][cli]") {
  const std::string dir = test_dir();
  const std::string fifo = dir + "/text.fifo";
  std::remove(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  struct Case {
    std::string args, error;
  };
  const Case cases[] = {
      {"--lr abc", "--lr: expected a finite number > 0 and <= 10, got 'abc'"},
      {"--lr inf", "--lr: expected a finite number > 0 and <= 10, got 'inf'"},
      {"--lr 0", "--lr: expected a finite number > 0 and <= 10, got '0'"},
      {"--embd 99999999999999999999", "--embd: expected an integer >= 1, got '99999999999999999999'"},
      {"--steps=2.5", "--steps: expected an integer >= 1, got '2.5'"},
      {"--budget 0.4", "--budget: the size must be at least 1 byte, got '0.4'"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const auto r = run_binary("examples/train_tiny_gpt", c.args, 30);
    CHECK(r.status == 2);
    CHECK(r.err == "error: " + c.error + " (--help for the flags)\n");
  }
  const Case paths[] = {
      {"--data " + dir, "--data: '" + dir + "' is not a regular file (a folder, FIFO or device)"},
      {"--data " + fifo, "--data: '" + fifo + "' is not a regular file (a folder, FIFO or device)"},
      {"--data " + dir + "/missing.txt", "--data: cannot open '" + dir + "/missing.txt': No such file or directory"},
  };
  for (const Case& c : paths) {
    INFO(c.args);
    const auto r = run_binary("examples/train_tiny_gpt", c.args + " --steps 1 --sample 0", 30);
    CHECK(r.status == 2);
    CHECK(r.err == "error: " + c.error + "\n");
  }
}

TEST_CASE("train_tiny_gpt: a full disk for stdout is a failed run, exit 1", "[examples][cli]") {
  const auto r = run_binary("examples/train_tiny_gpt", "--steps 1 --sample 0 --layers 1 --embd 8 --heads 1 --seq 8", 60,
                            "/dev/full");
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Matchers::EndsWith("error: cannot write standard output: No space left on device\n"));
}

#if !defined(__SANITIZE_ADDRESS__)  // AddressSanitizer aborts on a request this large instead of failing it
TEST_CASE("train_tiny_gpt: a model too large for memory is one line naming the bytes, exit 1 (it used to crash)",
          "[examples][cli]") {
  const auto r = run_binary("examples/train_tiny_gpt", "--embd 4000000000 --heads 1 --steps 1 --sample 0", 60);
  CHECK(r.status == 1);
  CHECK_THAT(r.err, Catch::Matchers::EndsWith("error: CPU allocator: out of memory allocating 656000000000 bytes (0 "
                                              "bytes already allocated)\n"));
}
#endif
