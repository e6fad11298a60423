// What tests/readme_test.cpp and tests/docs/tour_test.cpp check of a Markdown file's C++ (no
// PyTorch counterpart): the test's second source, written by tools/readme_blocks.cpp from the
// document, holds its ```cpp blocks. Every block compiles against //:remat (a block that is neither
// a program nor part of an example fails the build), every program runs and prints what the
// document shows after it, and every fragment is a run of lines of the example it names, whose
// binary runs. Included by exactly one source of each such test.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "remat.h"
#include "tools/readme_blocks.h"

namespace remat::doc_code {

using remat::readme_blocks::fragments;
using remat::readme_blocks::programs;

// A file of the test's runfiles (the workspace is named "remat").
inline std::string runfile(const std::string& path) {
  const char* dir = std::getenv("TEST_SRCDIR");
  return dir ? std::string(dir) + "/remat/" + path : path;
}

inline std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(trimmed(l));
  return out;
}

// Runs `fn` with stdout and stderr going to one file; returns what they got.
inline std::string captured(int (*fn)(), int* rc) {
  std::fflush(stdout);
  std::fflush(stderr);
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string path = std::string(tmp ? tmp : "/tmp") + "/readme_test.XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  REQUIRE(fd >= 0);
  const int out = dup(1), err = dup(2);
  dup2(fd, 1);
  dup2(fd, 2);
  *rc = fn();
  std::fflush(stdout);
  std::fflush(stderr);
  dup2(out, 1);
  dup2(err, 2);
  close(out);
  close(err);
  close(fd);
  std::string text = read(name.data());
  unlink(name.data());
  return text;
}


// The document's path from the workspace root, as the generator was given it ("docs/tour.md").
inline std::string document() { return readme_blocks::source(); }

}  // namespace remat::doc_code

TEST_CASE("the document has C++ blocks, each a program or part of an example", "[doc]") {
  using namespace remat::doc_code;
  INFO(document());
  CHECK(programs().size() + fragments().size() >= 1);
}

TEST_CASE("every program in the document runs, and prints what the document shows", "[doc]") {
  using namespace remat::doc_code;
  for (const auto& p : programs()) {
    INFO("the program at " << document() << ":" << p.line);
    int rc = -1;
    const std::string out = captured(p.run, &rc);
    remat::set_checkpoint_trace(false);  // what a program turned on stays with it
    CHECK(rc == 0);
    if (p.has_output) CHECK(out == p.expected_output);
  }
}

TEST_CASE("every fragment in the document is taken from the example it names, and that example runs", "[doc]") {
  using namespace remat::doc_code;
  std::set<std::string> run;
  for (const auto& f : fragments()) {
    INFO("the block at " << document() << ":" << f.line << ", from " << f.example);
    const std::string text = read(runfile(f.example));
    REQUIRE_FALSE(text.empty());  // else: add the file to the test's data in tests/BUILD
    const std::vector<std::string> file = lines_of(text);
    std::vector<std::string> block;
    for (const std::string& l : f.lines) block.push_back(trimmed(l));
    REQUIRE_FALSE(block.empty());
    // The block's lines, as one run of the file's lines (indentation aside).
    size_t longest = 0;
    for (size_t start = 0; start < file.size() && longest < block.size(); ++start) {
      size_t n = 0;
      while (n < block.size() && start + n < file.size() && file[start + n] == block[n]) ++n;
      longest = std::max(longest, n);
    }
    INFO("the first line not in the example: " << (longest < block.size() ? block[longest] : ""));
    CHECK(longest == block.size());

    if (!run.insert(f.example).second) continue;
    const std::string binary = runfile(f.example.substr(0, f.example.size() - 4));
    INFO("running " << binary << " (else: add //examples:NAME to the test's data in tests/BUILD)");
    REQUIRE(access(binary.c_str(), X_OK) == 0);
    CHECK(std::system((binary + " > /dev/null").c_str()) == 0);
  }
}
