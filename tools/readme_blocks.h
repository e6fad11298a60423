// What tools/readme_blocks.cpp extracts from a Markdown file's ```cpp blocks, as the generated code
// presents it to tests/readme_test.cpp (no PyTorch counterpart).
#pragma once

#include <string>
#include <vector>

namespace remat::readme_blocks {

// A block with a main function: compiled into the test as it stands (in a namespace of its own,
// its #include lines moved to the top of the file, main renamed) and run.
struct Program {
  int line = 0;                 // the block's first line of code in the Markdown file
  int (*run)() = nullptr;       // calls the block's main (argc 1 where it takes arguments)
  bool has_output = false;      // a ```text block right after it: what it must print
  std::string expected_output;  // stdout and stderr together, exactly
};

// A block that cannot stand alone: its first line, a comment, names an example file
// (examples/NAME.cpp), and its other lines are a run of that file's lines, which the test checks;
// the example's binary (//examples:NAME) is compiled by Bazel and run by the test.
struct Fragment {
  int line = 0;  // the block's first line of code
  std::string example;  // "examples/plan_budget.cpp"
  std::vector<std::string> lines;  // the block without its first line
};

const std::vector<Program>& programs();
const std::vector<Fragment>& fragments();
const char* source();  // the Markdown file's path, as given to the generator

}  // namespace remat::readme_blocks
