// Tests docs/api.md (no PyTorch counterpart): every name it lists is declared by remat.h (the
// second source, written by tools/api_names.cpp, names each one and compiles only if all exist),
// and every header remat.h includes has its section.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace remat::api_doc {
const std::vector<std::string>& names();
const std::vector<std::string>& headers();
}  // namespace remat::api_doc

namespace {

std::string read_runfile(const std::string& path) {
  const char* dir = std::getenv("TEST_SRCDIR");
  std::ifstream in(dir ? std::string(dir) + "/remat/" + path : path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("docs/api.md lists names, each once, under header sections", "[docs]") {
  const auto& names = remat::api_doc::names();
  REQUIRE_FALSE(names.empty());
  CHECK(std::set<std::string>(names.begin(), names.end()).size() == names.size());
  const auto& headers = remat::api_doc::headers();
  CHECK(std::set<std::string>(headers.begin(), headers.end()).size() == headers.size());
}

TEST_CASE("docs/api.md has a section for every header remat.h includes", "[docs]") {
  const std::string umbrella = read_runfile("remat.h");
  REQUIRE_FALSE(umbrella.empty());
  const std::regex include_re(R"re(^#include "([^"]+)")re");
  const auto& headers = remat::api_doc::headers();
  int included = 0;
  std::stringstream lines(umbrella);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, include_re)) continue;
    const std::string header = m[1];
    ++included;
    INFO("remat.h includes " << header << ", which docs/api.md has no `## `" << header << "`` section for");
    CHECK(std::find(headers.begin(), headers.end(), header) != headers.end());
  }
  CHECK(included > 0);
}

TEST_CASE("remat.h includes its headers in layer order, and its comment names every one", "[docs]") {
  const std::string umbrella = read_runfile("remat.h");
  REQUIRE_FALSE(umbrella.empty());
  // Dependencies point one way: engine/core <- engine/dispatch <- engine/autograd <- ops <- checkpoint <- nn.
  const std::vector<std::string> layers = {"engine/core/", "engine/dispatch/", "engine/autograd/",
                                           "ops/",         "checkpoint/",      "nn/"};
  const std::regex include_re(R"re(^#include "([^"]+)")re");
  const std::string comment = umbrella.substr(0, umbrella.find("#pragma once"));
  size_t last_layer = 0;
  std::string last_header;
  std::stringstream lines(umbrella);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, include_re)) continue;
    const std::string header = m[1];
    size_t layer = layers.size();
    for (size_t i = 0; i < layers.size(); ++i)
      if (header.rfind(layers[i], 0) == 0) layer = i;
    INFO("remat.h includes " << header << " after " << last_header);
    REQUIRE(layer < layers.size());
    CHECK(layer >= last_layer);
    if (layer == last_layer) CHECK(header > last_header);  // alphabetical within a layer
    // The comment names the file (nn/optim's headers as "optim/").
    const std::string file = header.substr(header.rfind('/') + 1);
    CHECK((comment.find(file) != std::string::npos || header.rfind("nn/optim/", 0) == 0));
    last_layer = layer;
    last_header = header;
  }
  CHECK(last_layer == layers.size() - 1);
}
