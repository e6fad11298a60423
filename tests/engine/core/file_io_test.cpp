// Tests engine/core/file_io.h (no PyTorch counterpart): inputs checked before a run (a folder, a
// FIFO, a missing or too large file refused), outputs written to a temporary name and renamed, a
// full disk (/dev/full) refused loudly.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "remat.h"  // the umbrella header reaches file_io.h

using namespace remat;
using Catch::Matchers::Contains;

namespace {

std::string temp_dir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return t ? t : "/tmp";
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

TEST_CASE("check_input_file refuses a missing file, a folder, a FIFO and a file over the limit", "[file_io]") {
  const std::string dir = temp_dir();
  REQUIRE_THROWS_WITH(check_input_file(dir + "/missing.json", "--compare", 100),
                      Contains("--compare: cannot read '") && Contains("missing.json': No such file or directory"));
  REQUIRE_THROWS_WITH(check_input_file(dir, "--compare", 100),
                      Contains("is not a regular file (a folder, FIFO or device)"));
  const std::string fifo = dir + "/input.fifo";
  std::remove(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE_THROWS_WITH(check_input_file(fifo, "--compare", 100), Contains("input.fifo' is not a regular file"));
  REQUIRE_THROWS_AS(read_input_file(fifo, "--compare", 100), UsageError);  // refused before it is opened
  const std::string big = dir + "/big.json";
  std::ofstream(big) << std::string(101, 'x');
  REQUIRE_THROWS_WITH(check_input_file(big, "--compare", 100),
                      Contains("big.json' is 101 bytes, more than the limit of 100"));
  std::ofstream(big) << "{}";
  CHECK(read_input_file(big, "--compare", 100) == "{}");
}

TEST_CASE("check_output_dir makes the folder, and refuses a file or a path it cannot make", "[file_io]") {
  const std::string dir = temp_dir() + "/out_dir";
  CHECK_NOTHROW(check_output_dir(dir, "--out"));
  CHECK(exists(dir));
  const std::string file = temp_dir() + "/plain_file";
  std::ofstream(file) << "x";
  REQUIRE_THROWS_WITH(check_output_dir(file, "--out"), Contains("--out: '") && Contains("plain_file' is not a folder"));
  REQUIRE_THROWS_WITH(check_output_dir(temp_dir() + "/no/such/dir", "--out"),
                      Contains("--out: cannot create the folder") && Contains("No such file or directory"));
}

TEST_CASE("write_file_atomically renames a checked file into place; a full disk fails loudly", "[file_io]") {
  const std::string path = temp_dir() + "/results.json";
  std::ofstream(path) << "an earlier run's file";
  write_file_atomically(path, "{\"new\": 1}");
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "{\"new\": 1}");
  CHECK_FALSE(exists(path + ".tmp-" + std::to_string(::getpid())));
  REQUIRE_THROWS_WITH(write_file_atomically("/dev/full", "x"), "cannot write '/dev/full': No space left on device");
  REQUIRE_THROWS_WITH(write_file_atomically(temp_dir() + "/no/such/dir/results.json", "x"),
                      Contains("cannot write '") && Contains("results.json': No such file or directory"));
}
