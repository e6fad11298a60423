// Tests ops/sdpa_kernel.cpp: the per-thread set of attention backends and its scoped guard.
#include <catch2/catch.hpp>
#include <thread>

#include "remat.h"

using namespace remat;
using Catch::Contains;
using Backends = std::vector<SDPBackend>;

TEST_CASE("sdpa_kernel enables the given backends while alive, nested guards restore in order", "[sdpa_kernel]") {
  CHECK(enabled_sdpa_backends() == Backends{SDPBackend::MATH});  // remat's default: the math path alone
  {
    sdpa_kernel flash(SDPBackend::FLASH_ATTENTION);
    CHECK(enabled_sdpa_backends() == Backends{SDPBackend::FLASH_ATTENTION});
    {
      // listed in any order, reported in selection order (the fused kernel first, as PyTorch's CPU picks)
      sdpa_kernel both(Backends{SDPBackend::MATH, SDPBackend::FLASH_ATTENTION});
      CHECK(enabled_sdpa_backends() == Backends{SDPBackend::FLASH_ATTENTION, SDPBackend::MATH});
    }
    CHECK(enabled_sdpa_backends() == Backends{SDPBackend::FLASH_ATTENTION});
    // per thread: another thread still has the default
    Backends other;
    std::thread([&] { other = enabled_sdpa_backends(); }).join();
    CHECK(other == Backends{SDPBackend::MATH});
  }
  CHECK(enabled_sdpa_backends() == Backends{SDPBackend::MATH});
  CHECK(std::string(toString(SDPBackend::FLASH_ATTENTION)) == "FLASH_ATTENTION");
  CHECK(std::string(toString(SDPBackend::MATH)) == "MATH");
}

TEST_CASE("sdpa_kernel errors", "[sdpa_kernel][errors]") {
  REQUIRE_THROWS_WITH(sdpa_kernel(Backends{}),
                      Contains("sdpa_kernel: expected at least one backend (MATH, FLASH_ATTENTION), got none"));
  CHECK(enabled_sdpa_backends() == Backends{SDPBackend::MATH});
}
