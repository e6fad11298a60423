// Tests bench/peer_figures.{h,cpp}: a peer's `key value` lines become figures, and a broken peer
// is reported by name rather than printed as zeros.
#include "bench/peer_figures.h"

#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;
using namespace remat::bench;

namespace {
const std::map<std::string, std::string> kRequired = {{"grad_off_ns", "a + b, grad off"}};
}

TEST_CASE("peer figures: parses version and figures") {
  PeerFigures f = parse_peer_figures("peer", "libtorch_version 1.13.1\n\ngrad_off_ns 431.5\nrequires_grad_ns 740\n",
                                     kRequired);
  CHECK(f.version == "1.13.1");
  CHECK(f.command == "peer");
  CHECK(f.get("grad_off_ns") == 431.5);
  CHECK(f.get("requires_grad_ns") == 740.0);
  CHECK(f.get("mode_ns") < 0);  // a case the peer does not have
  CHECK(parse_peer_figures("peer", "grad_off_ns 1\n", kRequired).version == "unknown");
}

TEST_CASE("peer figures: malformed lines and missing figures name the command and the line") {
  CHECK_THROWS_WITH(parse_peer_figures("peer", "grad_off_ns\n", kRequired),
                    "dispatch_overhead --libtorch peer: line 'grad_off_ns' is not one 'key value' pair");
  CHECK_THROWS_WITH(parse_peer_figures("peer", "grad_off_ns 1 2\n", kRequired),
                    "dispatch_overhead --libtorch peer: line 'grad_off_ns 1 2' is not one 'key value' pair");
  CHECK_THROWS_WITH(parse_peer_figures("peer", "grad_off_ns 12x\n", kRequired),
                    "dispatch_overhead --libtorch peer: the value of grad_off_ns is '12x', not a number of nanoseconds");
  CHECK_THROWS_WITH(parse_peer_figures("peer", "grad_off_ns -3\n", kRequired),
                    "dispatch_overhead --libtorch peer: the value of grad_off_ns is '-3', not a number of nanoseconds");
  // std::stod read these as numbers: infinite or not a number, no figure (issue 45).
  for (const std::string bad : {"inf", "nan", "1e999", "0x10", "+-1"})
    CHECK_THROWS_WITH(parse_peer_figures("peer", "grad_off_ns " + bad + "\n", kRequired),
                      "dispatch_overhead --libtorch peer: the value of grad_off_ns is '" + bad +
                          "', not a number of nanoseconds");
  CHECK_THROWS_WITH(parse_peer_figures("peer", "requires_grad_ns 3\n", kRequired),
                    "dispatch_overhead --libtorch peer printed no grad_off_ns line (a + b, grad off); it printed:\n"
                    "requires_grad_ns 3\n");
}

TEST_CASE("peer figures: runs the peer and reports a failing one") {
  PeerFigures f = run_peer("printf 'libtorch_version 9\\ngrad_off_ns 5\\n'", kRequired);
  CHECK(f.version == "9");
  CHECK(f.get("grad_off_ns") == 5.0);
  CHECK_THROWS_WITH(run_peer("exit 3", kRequired),
                    "dispatch_overhead --libtorch exit 3: it exited with status 3 (build it with "
                    "tools/dispatch_libtorch.sh --build-only)");
}
