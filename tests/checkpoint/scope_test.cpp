// Tests of checkpoint/scope.cpp.
#include <catch2/catch.hpp>

#include "remat.h"

using namespace remat;

TEST_CASE("scope builds a dotted path and unwinds", "[scope]") {
  REQUIRE(current_scope().empty());
  {
    scope a("layers");
    scope b("3");
    {
      scope c("mlp");
      scope d("fc2");
      REQUIRE(current_scope() == "layers.3.mlp.fc2");
      REQUIRE(current_scope_names().size() == 4);
    }
    REQUIRE(current_scope() == "layers.3");
  }
  REQUIRE(current_scope().empty());
}

TEST_CASE("scope_matches: glob semantics", "[scope]") {
  REQUIRE(scope_matches("*.mlp.fc2", "layers.3.mlp.fc2"));
  REQUIRE_FALSE(scope_matches("*.mlp.fc2", "layers.3.mlp.fc1"));
  REQUIRE(scope_matches("layers.?.attn", "layers.1.attn"));
  REQUIRE_FALSE(scope_matches("layers.?.attn", "layers.12.attn"));
  REQUIRE(scope_matches("*", ""));
  REQUIRE(scope_matches("layers.*", "layers.3.mlp"));
  REQUIRE_FALSE(scope_matches("", "layers"));
  REQUIRE(scope_matches("a*b*c", "aXXbYYc"));
}
