// Test helper: match an exception's type and message at once (Catch2 v2's string matchers
// apply to strings, not to exceptions).
//   REQUIRE_THROWS_MATCHES(expr, CheckpointError, What(Contains("...") && Contains("...")));
#pragma once

#include <catch2/catch.hpp>
#include <exception>
#include <string>

namespace remat::testing {

template <class M>
class WhatMatcher : public Catch::MatcherBase<std::exception> {
 public:
  explicit WhatMatcher(M m) : m_(std::move(m)) {}
  bool match(const std::exception& e) const override { return m_.match(e.what()); }
  std::string describe() const override { return "has a message that " + m_.toString(); }

 private:
  M m_;
};

template <class M>
WhatMatcher<M> What(M m) {
  return WhatMatcher<M>(std::move(m));
}

}  // namespace remat::testing
