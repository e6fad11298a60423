// Runs one of tools/'s generators on a file written for the test (no PyTorch counterpart): for the
// tests of tools/readme_blocks.cpp and tools/api_names.cpp, which need the binaries in their data.
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

}  // namespace remat::testing
