// Tests bench/peer_process.{h,cpp} (no PyTorch counterpart): a child process asked a line at a
// time; one that ends, answers nothing or never ends is reported in one line, never a hang.
#include "bench/peer_process.h"

#include <catch2/catch.hpp>
#include <chrono>

#include "remat.h"

using namespace remat;
using remat::bench::PeerProcess;

namespace {

std::string error_of(PeerProcess& p, const std::string& line) {
  try {
    p.ask(line);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("peer process: each line asked is answered by one line, in turn") {
  PeerProcess p("ops --beside", "while read l; do echo \"got $l\"; done");
  CHECK(p.ask("one") == "got one");
  CHECK(p.ask("{\"a\": [1, 2]}") == "got {\"a\": [1, 2]}");
  CHECK(p.command() == "while read l; do echo \"got $l\"; done");
}

TEST_CASE("peer process: a child that ends, or ends its output, is reported with how it ended") {
  PeerProcess exits("ops --beside", "exit 3");
  // as below: it may have ended before the line was written (EPIPE; seen on a loaded 2-core machine) or after
  const std::string first = error_of(exits, "x");
  INFO(first);
  CHECK((first == "ops --beside exit 3: it answered no line to x (it exited with status 3)" ||
         first == "ops --beside exit 3: could not write to it (it exited with status 3)"));
  CHECK(error_of(exits, "y") == "ops --beside exit 3: it has already ended");

  PeerProcess once("ops --beside", "read l; echo first");
  CHECK(once.ask("a") == "first");
  const std::string second = error_of(once, "b");
  // it may have ended before the line was written (EPIPE) or after
  const bool reported = second == "ops --beside read l; echo first: it answered no line to b (it exited with status 0)" ||
                        second == "ops --beside read l; echo first: could not write to it (it exited with status 0)";
  CHECK(reported);
  INFO(second);

  PeerProcess partial("ops --beside", "read l; printf 'no newline'");
  CHECK(error_of(partial, "a") == "ops --beside read l; printf 'no newline': it answered no line to a (it exited with "
                                  "status 0)");
}

TEST_CASE("peer process: a child that closes its output but does not end is killed, not waited for") {
  const auto start = std::chrono::steady_clock::now();
  {
    PeerProcess stuck("ops --beside", "exec >&-; exec sleep 100");
    CHECK(error_of(stuck, "a") == "ops --beside exec >&-; exec sleep 100: it answered no line to a (it was killed by "
                                  "signal 9)");
  }
  {
    // sleep keeps the pipe open and never reads it: the write of "a" lands in the pipe's buffer (had the child
    // closed its input, say by `< /dev/null`, the write would race its exec and could fail with EPIPE)
    PeerProcess deaf("ops --beside", "trap '' TERM; echo hi; exec sleep 100");
    CHECK(deaf.ask("a") == "hi");
  }  // the destructor ends its input: sleep does not notice, so it is killed after 2 s
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

TEST_CASE("peer process: an empty command is refused") {
  try {
    PeerProcess p("ops --beside", "");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "ops --beside: the command is empty");
  }
}
