// Mirrors torch's version checks (torch.__version__ against TORCH_VERSION_MAJOR/MINOR/PATCH).
// Tests engine/core/version.h (REMAT_VERSION_MAJOR/MINOR/PATCH, REMAT_VERSION, remat::version()).
#include <catch2/catch.hpp>

#include <string>

#include "remat.h"  // the umbrella header reaches version.h: a user needs no other include

TEST_CASE("remat::version() is the library's MAJOR.MINOR.PATCH, the headers' REMAT_VERSION", "[version]") {
  const std::string expected = std::to_string(REMAT_VERSION_MAJOR) + "." + std::to_string(REMAT_VERSION_MINOR) +
                               "." + std::to_string(REMAT_VERSION_PATCH);
  REQUIRE(std::string(REMAT_VERSION) == expected);
  REQUIRE(std::string(remat::version()) == expected);
  // The parts are plain integers, so a user's `#if REMAT_VERSION_MINOR >= 3` works.
#if REMAT_VERSION_MAJOR * 10000 + REMAT_VERSION_MINOR * 100 + REMAT_VERSION_PATCH < 300
  FAIL("remat's versions start at 0.3.0, got " << expected);
#endif
}
