// Tests tools/readme_blocks.cpp (no PyTorch counterpart): what it writes for a program, its
// output and a fragment, and the errors it stops the build with, each naming the line.
#include <catch2/catch.hpp>

#include "tests/tools/tool_runner.h"

using remat::testing::run_tool;
using remat::testing::ToolRun;
using Catch::Matchers::Contains;

TEST_CASE("readme_blocks: a program becomes a function the test calls, with its output; a fragment keeps its lines",
          "[tools]") {
  const ToolRun r = run_tool("tools/readme_blocks", "doc.md",
                             "# t\n\n```cpp\n#include <cstdio>\nint main() { std::printf(\"hi\\n\"); }\n```\n\n"
                             "```text\nhi\n```\n\n```cpp\n// examples/quickstart.cpp\nnn::GPT model(config);\n```\n");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("#include <cstdio>"));
  CHECK_THAT(r.output, Contains("namespace block_line_4 {\n#line 4 \"doc.md\""));
  CHECK_THAT(r.output, Contains("int readme_main() { std::printf(\"hi\\n\");  return 0; }"));
  CHECK_THAT(r.output, Contains("{4, &block_line_4::run, true, R\"rb(hi\n)rb\"}"));
  CHECK_THAT(r.output, Contains("{13, \"examples/quickstart.cpp\", {R\"rb(nn::GPT model(config);)rb\", }}"));
}

TEST_CASE("readme_blocks: a block that is neither a program nor part of an example fails, naming its line",
          "[tools][errors]") {
  const ToolRun r = run_tool("tools/readme_blocks", "doc.md", "# t\n\n```cpp\nint x = 1;\n```\n");
  CHECK(r.status == 1);
  CHECK_THAT(r.errors, Contains("doc.md:4: this ```cpp block is neither a program (int main) nor part of an example"));
}

TEST_CASE("readme_blocks: a block that is never closed fails, naming its line", "[tools][errors]") {
  const ToolRun r = run_tool("tools/readme_blocks", "doc.md", "# t\n```cpp\nint main() {}\n");
  CHECK(r.status == 1);
  CHECK_THAT(r.errors, Contains("doc.md:2: a ```cpp block that is never closed"));
}

TEST_CASE("readme_blocks: a very long line fails, naming its line, instead of crashing", "[tools][errors]") {
  const ToolRun r = run_tool("tools/readme_blocks", "doc.md",
                             "# t\n\n```cpp\nint main() { return 0; }\n// " + std::string(1000000, 'x') + "\n```\n");
  CHECK(r.status == 1);
  CHECK(r.errors == "error: doc.md:5: a line of 1000003 characters (at most 10000)\n");
  CHECK(r.output.empty());
}

TEST_CASE("readme_blocks: a missing input or wrong arguments are bad usage (exit 2); a full disk fails (exit 1)",
          "[tools][errors]") {
  using remat::testing::run_binary;
  const auto missing = run_binary("tools/readme_blocks", "missing.md out.cpp", 30);
  CHECK(missing.status == 2);
  CHECK(missing.err == "error: readme_blocks: cannot read 'missing.md': No such file or directory\n");
  const auto args = run_binary("tools/readme_blocks", "", 30);
  CHECK(args.status == 2);
  CHECK(args.err == "error: expected two arguments (usage: readme_blocks README.md OUT.cpp)\n");
  REQUIRE(run_tool("tools/readme_blocks", "doc.md", "# t\n\n```cpp\nint main() {}\n```\n").status == 0);
  const auto full = run_binary("tools/readme_blocks", "doc.md /dev/full", 30);
  CHECK(full.status == 1);
  CHECK(full.err == "error: cannot write '/dev/full': No space left on device\n");
}
