// A peer benchmark asked one JSON line at a time (see peer_process.h).
#include "bench/peer_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "remat.h"

namespace remat::bench {

PeerProcess::PeerProcess(std::string flag, std::string command) : flag_(std::move(flag)), command_(std::move(command)) {
  REMAT_CHECK(!command_.empty(), flag_, ": the command is empty");
  int in[2], out[2];  // in: parent -> child's stdin; out: child's stdout -> parent
  REMAT_CHECK(::pipe(in) == 0, flag_, " ", command_, ": pipe failed: ", std::strerror(errno));
  if (::pipe(out) != 0) {
    const int err = errno;
    ::close(in[0]);
    ::close(in[1]);
    REMAT_CHECK(false, flag_, " ", command_, ": pipe failed: ", std::strerror(err));
  }
  std::fflush(nullptr);  // nothing buffered here is written twice by the child
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::close(in[0]);
    ::close(in[1]);
    ::close(out[0]);
    ::close(out[1]);
    ::execl("/bin/sh", "sh", "-c", command_.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  const int err = errno;
  ::close(in[0]);
  ::close(out[1]);
  if (pid_ < 0) {
    ::close(in[1]);
    ::close(out[0]);
    REMAT_CHECK(false, flag_, " ", command_, ": fork failed: ", std::strerror(err));
  }
  to_child_ = ::fdopen(in[1], "w");
  from_child_ = ::fdopen(out[0], "r");
  // A child that has exited makes a write fail with EPIPE (reported by ask) instead of killing us.
  ::signal(SIGPIPE, SIG_IGN);
}

PeerProcess::~PeerProcess() {
  reap();  // a server ends at its input's end
  if (from_child_ != nullptr) std::fclose(from_child_);
}

std::string PeerProcess::reap() {
  if (to_child_ != nullptr) std::fclose(to_child_);
  to_child_ = nullptr;
  if (pid_ <= 0) return "it ended";
  // A child that does not end within 2 s of its input's end is killed (no hang).
  int status = 0;
  pid_t got = 0;
  for (int i = 0; i < 200 && (got = ::waitpid(pid_, &status, WNOHANG)) == 0; ++i) ::usleep(10000);
  if (got == 0) {
    ::kill(pid_, SIGKILL);
    got = ::waitpid(pid_, &status, 0);
  }
  const pid_t pid = pid_;
  pid_ = -1;
  if (got != pid) return "it ended";
  if (WIFEXITED(status)) return "it exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "it was killed by signal " + std::to_string(WTERMSIG(status));
  return "it ended";
}

std::string PeerProcess::ask(const std::string& line) {
  REMAT_CHECK(to_child_ != nullptr && from_child_ != nullptr, flag_, " ", command_, ": it has already ended");
  const bool sent = std::fputs(line.c_str(), to_child_) >= 0 && std::fputc('\n', to_child_) != EOF &&
                    std::fflush(to_child_) == 0;
  REMAT_CHECK(sent, flag_, " ", command_, ": could not write to it (", reap(), ")");
  constexpr size_t kMaxLine = 1 << 20;
  std::string answer;
  for (int c; (c = std::fgetc(from_child_)) != '\n';) {
    REMAT_CHECK(c != EOF, flag_, " ", command_, ": it answered no line to ", line, " (", reap(), ")");
    answer.push_back(static_cast<char>(c));
    REMAT_CHECK(answer.size() <= kMaxLine, flag_, " ", command_, ": its answer to ", line,
                " is over 1 MiB without a newline");
  }
  return answer;
}

}  // namespace remat::bench
