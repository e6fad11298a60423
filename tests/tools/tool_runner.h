// Runs one of tools/'s generators on a file written for the test (no PyTorch counterpart): for the
// tests of tools/readme_blocks.cpp and tools/api_names.cpp, which need the binaries in their data;
// and any binary with arguments (run_binary), for the tests of the benchmarks' and examples' mains.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace remat::testing {

struct ToolRun {
  int status = -1;     // the exit status
  std::string output;  // the file it wrote
  std::string errors;  // its stderr
};

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `tool` is its runfiles path ("tools/readme_blocks"); `name` the input's file name, which its
// messages show; the tool runs in the test's temporary folder.
inline ToolRun run_tool(const std::string& tool, const std::string& name, const std::string& input) {
  const char* src = std::getenv("TEST_SRCDIR");
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string binary = (src ? std::string(src) + "/remat/" : std::string()) + tool;
  const std::string dir = tmp ? tmp : "/tmp";
  std::ofstream(dir + "/" + name) << input;
  const std::string command = "cd '" + dir + "' && '" + binary + "' " + name + " out.cpp 2> errors.txt";
  std::remove((dir + "/out.cpp").c_str());
  const int raw = std::system(command.c_str());
  ToolRun r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.output = read_text(dir + "/out.cpp");
  r.errors = read_text(dir + "/errors.txt");
  return r;
}

struct BinaryRun {
  int status = -1;    // the exit status; 124: killed after the time limit (a hang)
  std::string out;    // its stdout
  std::string err;    // its stderr
};

// Runs `binary` (its runfiles path, "bench/memory_vs_recompute") with `args` (shell words, quoted
// by the caller) in the test's temporary folder, killed after `limit_s` seconds. `stdout_to`:
// where its stdout goes instead of being captured ("/dev/full": a full disk).
inline BinaryRun run_binary(const std::string& binary, const std::string& args, int limit_s = 120,
                            const std::string& stdout_to = "") {
  const char* src = std::getenv("TEST_SRCDIR");
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = (src ? std::string(src) + "/remat/" : std::string()) + binary;
  const std::string dir = tmp ? tmp : "/tmp";
  const std::string out = stdout_to.empty() ? dir + "/stdout.txt" : stdout_to;
  const std::string command = "cd '" + dir + "' && timeout " + std::to_string(limit_s) + " '" + path + "' " + args +
                              " > '" + out + "' 2> '" + dir + "/stderr.txt'";
  std::remove((dir + "/stdout.txt").c_str());
  const int raw = std::system(command.c_str());
  BinaryRun r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  if (stdout_to.empty()) r.out = read_text(dir + "/stdout.txt");
  r.err = read_text(dir + "/stderr.txt");
  return r;
}

// The test's temporary folder (TEST_TMPDIR).
inline std::string test_dir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp ? tmp : "/tmp";
}

}  // namespace remat::testing
