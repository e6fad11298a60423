// Files a program is given on its command line (no PyTorch counterpart; torch.save writes in
// place): inputs checked before a run starts (a regular file, not a folder or a FIFO that would
// never end, and not too large) and outputs written safely (to a temporary name in the same
// folder, the write and the close checked, then renamed over the target, so that a failed run
// never leaves a file that looks complete). Header-only, free of the rest of remat but for
// error.h and cli.h: the benchmarks, the examples and tools/ use it.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/core/cli.h"

namespace remat {

// Throws UsageError ("<what>: cannot read 'PATH': No such file or directory") unless `path` is a
// regular file this process can read, of at most `max_bytes`.
inline void check_input_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw UsageError(what + ": cannot read " + cli_detail::quoted_path(path) + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw UsageError(what + ": " + cli_detail::quoted_path(path) + " is not a regular file (a folder, FIFO or device)");
  if (::access(path.c_str(), R_OK) != 0)
    throw UsageError(what + ": cannot read " + cli_detail::quoted_path(path) + ": " + std::strerror(errno));
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    throw UsageError(what + ": " + cli_detail::quoted_path(path) + " is " + std::to_string(st.st_size) +
                     " bytes, more than the limit of " + std::to_string(max_bytes));
}

// The bytes of a file that check_input_file accepts; read errors throw remat::Error.
inline std::string read_input_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  check_input_file(path, what, max_bytes);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw Error(what + ": cannot open " + cli_detail::quoted_path(path) + ": " + std::strerror(errno));
  std::string bytes;
  char buf[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    bytes.append(buf, n);
    if (bytes.size() > max_bytes) break;  // it grew since the check
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw Error(what + ": error while reading " + cli_detail::quoted_path(path));
  if (bytes.size() > max_bytes)
    throw Error(what + ": " + cli_detail::quoted_path(path) + " is more than the limit of " + std::to_string(max_bytes) +
                " bytes");
  return bytes;
}

// Makes `dir` if it is missing; throws UsageError unless it is then a folder this process can
// write into. For an output folder, before the run that fills it.
inline void check_output_dir(const std::string& dir, const std::string& what) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    throw UsageError(what + ": cannot create the folder " + cli_detail::quoted_path(dir) + ": " + std::strerror(errno));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError(what + ": " + cli_detail::quoted_path(dir) + " is not a folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw UsageError(what + ": cannot write into " + cli_detail::quoted_path(dir) + ": " + std::strerror(errno));
}

namespace file_io_detail {
inline void write_all(std::FILE* f, const std::string& bytes, const std::string& path) {
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() && std::fflush(f) == 0;
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed)
    throw Error("cannot write " + cli_detail::quoted_path(path) + ": " + std::strerror(wrote ? errno : write_errno));
}
}  // namespace file_io_detail

// Writes `bytes` to PATH.tmp-PID, checks the write and the close, then renames it to `path`: a
// reader never sees a half-written file, and a failed write leaves no file behind. A `path` that
// exists and is not a regular file (a device such as /dev/full, a FIFO) is written in place, the
// write and the close still checked. Throws remat::Error naming the path and the system's reason.
inline void write_file_atomically(const std::string& path, const std::string& bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) throw Error("cannot write " + cli_detail::quoted_path(path) + ": " + std::strerror(errno));
    file_io_detail::write_all(f, bytes, path);
    return;
  }
  const std::string temp = path + ".tmp-" + std::to_string(::getpid());
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (f == nullptr) throw Error("cannot write " + cli_detail::quoted_path(path) + ": " + std::strerror(errno));
  try {
    file_io_detail::write_all(f, bytes, path);
  } catch (...) {
    std::remove(temp.c_str());
    throw;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(temp.c_str());
    throw Error("cannot write " + cli_detail::quoted_path(path) + ": rename failed: " + std::strerror(e));
  }
}

}  // namespace remat
