// A peer benchmark running beside this one as a child process, asked one JSON line at a time (no
// PyTorch counterpart). `ops --beside CMD` keeps `bench/torch_ops.py --serve` waiting on its
// stdin and, row after row, times remat's op, then asks the peer to time PyTorch's, in turn: both
// figures of a round are taken within a second of each other, so the machine's swings (25% and
// more from minute to minute on a shared host) move both alike. The child blocks on its stdin
// while this process times, and this process blocks on the child's stdout while it times.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <string>

namespace remat::bench {

class PeerProcess {
 public:
  // Starts `command` with /bin/sh -c, its stdin and stdout piped to this process (its stderr is
  // this process's). `flag` names the program and its option in messages ("ops --beside",
  // "memory_vs_recompute --beside"). Throws remat::Error if it cannot be started.
  PeerProcess(std::string flag, std::string command);
  // Closes the child's stdin (its end of input) and waits for it.
  ~PeerProcess();
  PeerProcess(const PeerProcess&) = delete;
  PeerProcess& operator=(const PeerProcess&) = delete;

  // Writes `line` and a newline to the child, then returns the one line it answers (without the
  // newline). Throws remat::Error naming the command when the child has exited or closed its
  // output (with its exit status), or answers more than 1 MiB without a newline.
  std::string ask(const std::string& line);

  const std::string& command() const { return command_; }

 private:
  // Ends the child's input, waits for it to end (killing it after 2 s) and says how it ended,
  // for messages.
  std::string reap();

  std::string flag_, command_;
  pid_t pid_ = -1;
  std::FILE* to_child_ = nullptr;
  std::FILE* from_child_ = nullptr;
};

}  // namespace remat::bench
