// The generator behind tests/readme_test.cpp (no PyTorch counterpart): reads a Markdown file's
// ```cpp blocks and writes them as one C++ file, which Bazel compiles against //:remat.
//
//   readme_blocks README.md OUT.cpp
//
// Each block is one of two kinds (tools/readme_blocks.h):
//   - a program: it has `int main(`. It goes into a namespace of its own, with `#line` directives
//     that point compiler errors at the Markdown file's lines; its #include lines move to the top
//     of the file, main becomes a function the test calls (with main's implicit `return 0`). A
//     ```text block right after it is what it must print.
//   - a fragment: its first line is a comment naming an example file (`// ... examples/NAME.cpp`);
//     the rest must be a run of that file's lines (the test checks, and runs the example).
// Any other ```cpp block is an error (exit 1, naming the line): every block in the file compiles.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/core/file_io.h"

namespace {

// Longer lines, or blocks, are refused: std::regex recurses once per character it matches and
// would overflow the stack.
constexpr size_t kMaxLine = 10000;
constexpr size_t kMaxBlock = 50000;
// README.md is about 30 KB.
constexpr uint64_t kMaxInputBytes = 16 << 20;

// A failed run: main prints "error: ..." and exits 1 (engine/core/cli.h).
[[noreturn]] void fail(const std::string& what) { throw remat::Error(what); }

struct Block {
  int line = 0;  // first line of code, 1-based
  std::vector<std::string> code;
  std::vector<std::string> output;  // a ```text block right after it
  bool has_output = false;
};

bool fence(const std::string& line, const std::string& lang) {
  std::string s = line;
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s == "```" + lang;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

std::vector<Block> read_blocks(const std::string& path) {
  std::istringstream in(remat::read_input_file(path, "readme_blocks", kMaxInputBytes));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) {
    if (l.size() > kMaxLine)
      fail(path + ":" + std::to_string(lines.size() + 1) + ": a line of " + std::to_string(l.size()) +
           " characters (at most " + std::to_string(kMaxLine) + ")");
    lines.push_back(l);
  }
  std::vector<Block> blocks;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!fence(lines[i], "cpp")) continue;
    Block b;
    b.line = static_cast<int>(i) + 2;
    size_t j = i + 1;
    for (; j < lines.size() && !fence(lines[j], ""); ++j) b.code.push_back(lines[j]);
    if (j == lines.size()) fail(path + ":" + std::to_string(i + 1) + ": a ```cpp block that is never closed");
    if (joined(b.code).size() > kMaxBlock)
      fail(path + ":" + std::to_string(i + 1) + ": a ```cpp block of more than " + std::to_string(kMaxBlock) +
           " characters");
    size_t k = j + 1;
    while (k < lines.size() && lines[k].find_first_not_of(" \t\r") == std::string::npos) ++k;
    if (k < lines.size() && fence(lines[k], "text")) {
      b.has_output = true;
      for (++k; k < lines.size() && !fence(lines[k], ""); ++k) b.output.push_back(lines[k]);
    }
    blocks.push_back(b);
    i = j;
  }
  return blocks;
}

// A raw string literal holding `text`, with a delimiter that does not occur in it.
std::string raw(const std::string& text) {
  std::string d = "rb";
  while (text.find(")" + d + "\"") != std::string::npos) d += "x";
  return "R\"" + d + "(" + text + ")" + d + "\"";
}

// Index just past the brace that closes the one at `open` (strings, characters and comments skipped).
size_t matching_brace(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      i = s.find('\n', i);
      if (i == std::string::npos) return std::string::npos;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      i = s.find("*/", i + 2);
      if (i == std::string::npos) return std::string::npos;
      ++i;
    } else if (c == '"' || c == '\'') {
      for (++i; i < s.size() && s[i] != c; ++i)
        if (s[i] == '\\') ++i;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string::npos;
}

int run(int argc, char** argv) {
  if (argc != 3) throw remat::UsageError("expected two arguments (usage: readme_blocks README.md OUT.cpp)");
  std::string path = argv[1];
  if (path.rfind("./", 0) == 0) path = path.substr(2);
  const std::vector<Block> blocks = read_blocks(path);
  const std::regex example_re(R"(^\s*//.*\b(examples/[A-Za-z0-9_]+\.cpp)\b)");
  const std::regex main_re(R"(\bint\s+main\s*\(([^)]*)\))");
  const std::regex include_re(R"(^\s*#\s*include\b.*)");

  std::set<std::string> includes;
  std::ostringstream programs, registry_programs, registry_fragments;
  for (const Block& b : blocks) {
    std::smatch m;
    if (!b.code.empty() && std::regex_search(b.code[0], m, example_re)) {
      std::vector<std::string> rest(b.code.begin() + 1, b.code.end());
      registry_fragments << "      {" << b.line << ", \"" << m[1].str() << "\", {";
      for (const std::string& l : rest) registry_fragments << raw(l) << ", ";
      registry_fragments << "}},\n";
      continue;
    }
    std::string code;
    for (const std::string& l : b.code) code += (std::regex_match(l, include_re) ? "" : l) + "\n";
    for (const std::string& l : b.code)
      if (std::regex_match(l, include_re)) includes.insert(l.substr(l.find('#')));
    if (!std::regex_search(code, m, main_re)) {
      fail(path + ":" + std::to_string(b.line) +
           ": this ```cpp block is neither a program (int main) nor part of an example: begin it with a "
           "comment naming the example file it is taken from (// examples/NAME.cpp)");
    }
    const bool takes_args = m[1].str().find_first_not_of(" \tvoid") != std::string::npos;
    const size_t at = static_cast<size_t>(m.position(0));
    const size_t open = code.find('{', at);
    const size_t close = open == std::string::npos ? open : matching_brace(code, open);
    if (close == std::string::npos) {
      fail(path + ":" + std::to_string(b.line) + ": cannot find the body of main");
    }
    // main's implicit `return 0`, which a renamed main would not have.
    code = code.substr(0, at) + "int readme_main(" + m[1].str() + ")" + code.substr(at + m.length(0), close - at - m.length(0)) +
           " return 0; " + code.substr(close);
    const std::string ns = "block_line_" + std::to_string(b.line);
    programs << "namespace " << ns << " {\n#line " << b.line << " \"" << path << "\"\n"
             << code << "int run() {\n"
             << (takes_args ? "  static char name[] = \"readme\";\n  static char* args[] = {name, nullptr};\n"
                              "  return readme_main(1, args);\n"
                            : "  return readme_main();\n")
             << "}\n}  // namespace " << ns << "\n\n";
    registry_programs << "      {" << b.line << ", &" << ns << "::run, " << (b.has_output ? "true" : "false") << ", "
                      << raw(joined(b.output)) << "},\n";
  }

  std::ostringstream out;
  out << "// Generated by //tools:readme_blocks from " << path << ": its ```cpp blocks. Do not edit.\n";
  for (const std::string& inc : includes) out << inc << "\n";
  out << "#include \"tools/readme_blocks.h\"\n\n"
      << "namespace remat::readme_blocks {\n\n"
      << programs.str() << "const std::vector<Program>& programs() {\n  static const std::vector<Program> p = {\n"
      << registry_programs.str() << "  };\n  return p;\n}\n\n"
      << "const std::vector<Fragment>& fragments() {\n  static const std::vector<Fragment> f = {\n"
      << registry_fragments.str() << "  };\n  return f;\n}\n\n"
      << "const char* source() { return \"" << path << "\"; }\n\n"
      << "}  // namespace remat::readme_blocks\n";
  remat::write_file_atomically(argv[2], out.str());
  return 0;
}

}  // namespace

// Anything thrown: one "error: ..." line; exit 2 for bad usage, 1 for a failed run (engine/core/cli.h).
int main(int argc, char** argv) {
  return remat::run_main([&] { return run(argc, argv); });
}
