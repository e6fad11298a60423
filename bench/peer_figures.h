// A peer's figures for bench/dispatch_overhead, read from the `key value` lines a peer binary
// prints (no PyTorch counterpart; tools/dispatch_overhead_libtorch.cpp is the libtorch peer).
// The peer runs as a child process of the bench, so its figures come from the same run.
#pragma once

#include <map>
#include <string>

namespace remat::bench {

struct PeerFigures {
  std::string command;                // what was run, e.g. "/tmp/.../dispatch_overhead_libtorch"
  std::string version;                // the peer's `libtorch_version` line, "unknown" when absent
  std::map<std::string, double> ns;   // "grad_off_ns" -> 431.2
  // The figure for `key`, or a negative value when the peer does not have that case.
  double get(const std::string& key) const;
};

// Parses a peer's output: one `key value` pair per line (blank lines ignored). `libtorch_version`
// is the version; every other value must be a number. Throws remat::Error naming the command and
// the offending line on a malformed one, and when `required` keys are missing.
PeerFigures parse_peer_figures(const std::string& command, const std::string& output,
                               const std::map<std::string, std::string>& required);

// Runs `command` through the shell and parses what it prints. Throws remat::Error naming the
// command and its exit status when it fails.
PeerFigures run_peer(const std::string& command, const std::map<std::string, std::string>& required);

}  // namespace remat::bench
