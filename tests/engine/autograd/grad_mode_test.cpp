// Mirrors test/cpp/api/grad_mode.cpp.
// Tests engine/autograd/grad_mode.h (GradMode and its guards).
#include <catch2/catch.hpp>

#include <thread>

#include "remat.h"

using namespace remat;
using namespace remat::autograd;

TEST_CASE("Grad mode guards nest and restore", "[grad_mode]") {
  REQUIRE(is_grad_enabled());
  {
    NoGradGuard a;
    REQUIRE_FALSE(is_grad_enabled());
    {
      EnableGradGuard b;
      REQUIRE(is_grad_enabled());
      {
        AutoGradMode c(false);
        REQUIRE_FALSE(GradMode::is_enabled());
      }
      REQUIRE(is_grad_enabled());
    }
    REQUIRE_FALSE(is_grad_enabled());
  }
  REQUIRE(is_grad_enabled());
}

TEST_CASE("Grad mode is per thread", "[grad_mode]") {
  NoGradGuard off;
  bool other = false;
  std::thread t([&] { other = is_grad_enabled(); });
  t.join();
  REQUIRE(other);
  REQUIRE_FALSE(is_grad_enabled());
}
