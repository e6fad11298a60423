// Tests tools/api_names.cpp (no PyTorch counterpart): the check it writes for each kind of name,
// and the errors it stops the build with.
#include <catch2/catch.hpp>

#include "tests/tools/tool_runner.h"

using remat::testing::run_tool;
using remat::testing::ToolRun;
using Catch::Matchers::Contains;

TEST_CASE("api_names: namespace members, class members (the qualifier carries over) and macros", "[tools]") {
  const ToolRun r = run_tool("tools/api_names", "api.md",
                             "# t\n\n## `engine/core/tensor.h`\n\n| name | what | PyTorch |\n|---|---|---|\n"
                             "| `nn::GPT`, `GPTConfig` | a | b |\n| `Tensor::sizes`, `strides` | a | b |\n"
                             "| `REMAT_CHECK` | a | b |\n");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.output, Contains("using ::remat::nn::GPT;"));
  CHECK_THAT(r.output, Contains("using ::remat::nn::GPTConfig;"));  // the qualifier carries over
  CHECK_THAT(r.output, Contains("struct Probe : Q { using Q::strides; };"));
  CHECK_THAT(r.output, Contains("<::remat::Tensor>;"));
  CHECK_THAT(r.output, Contains("#ifndef REMAT_CHECK"));
  CHECK_THAT(r.output, Contains("\"engine/core/tensor.h\","));
}

TEST_CASE("api_names: a name listed twice fails, naming the line", "[tools][errors]") {
  const ToolRun r = run_tool("tools/api_names", "api.md",
                             "## `a.h`\n\n| name | x | y |\n|---|---|---|\n| `Tensor` | a | b |\n| `Tensor` | a | b |\n");
  CHECK(r.status == 1);
  CHECK_THAT(r.errors, Contains("api.md:6: `Tensor` is listed twice"));
}

TEST_CASE("api_names: a file without header sections fails", "[tools][errors]") {
  const ToolRun r = run_tool("tools/api_names", "api.md", "# nothing here\n");
  CHECK(r.status == 1);
  CHECK_THAT(r.errors, Contains("api.md: no `## header` sections with names found"));
}

TEST_CASE("api_names: a very long line fails, naming its line, instead of crashing", "[tools][errors]") {
  const ToolRun r = run_tool("tools/api_names", "api.md",
                             "## `engine/core/tensor.h`\n\n| `" + std::string(1000000, 'x') + "` | a name |\n");
  CHECK(r.status == 1);
  CHECK(r.errors == "error: api.md:3: a line of 1000015 characters (at most 10000)\n");
  CHECK(r.output.empty());
}

TEST_CASE("api_names: a missing input or wrong arguments are bad usage (exit 2); a full disk fails (exit 1)",
          "[tools][errors]") {
  using remat::testing::run_binary;
  const auto missing = run_binary("tools/api_names", "missing.md out.cpp", 30);
  CHECK(missing.status == 2);
  CHECK(missing.err == "error: api_names: cannot read 'missing.md': No such file or directory\n");
  const auto args = run_binary("tools/api_names", "only_one.md", 30);
  CHECK(args.status == 2);
  CHECK(args.err == "error: expected two arguments (usage: api_names docs/api.md OUT.cpp)\n");
  REQUIRE(run_tool("tools/api_names", "api.md", "## `engine/core/tensor.h`\n\n| `Tensor` | a | b |\n").status == 0);
  const auto full = run_binary("tools/api_names", "api.md /dev/full", 30);
  CHECK(full.status == 1);
  CHECK(full.err == "error: cannot write '/dev/full': No space left on device\n");
}
