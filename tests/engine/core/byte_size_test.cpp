// Tests engine/core/byte_size.h (no PyTorch counterpart): sizes read as people write them on a
// command line, and bytes printed for people.
#include <catch2/catch.hpp>

#include "remat.h"  // the umbrella header reaches byte_size.h

using namespace remat;

TEST_CASE("parse_byte_size reads bytes, decimal and binary units", "[byte_size]") {
  CHECK(parse_byte_size("--budget", "40MiB") == 40 << 20);
  CHECK(parse_byte_size("--budget", "1.5GiB") == int64_t{3} << 29);
  CHECK(parse_byte_size("--budget", "800KB") == 800000);
  CHECK(parse_byte_size("--budget", "2GB") == 2000000000);
  CHECK(parse_byte_size("--budget", "512B") == 512);
  CHECK(parse_byte_size("--budget", "65536") == 65536);
}

TEST_CASE("parse_byte_size names the flag and the text it cannot read", "[byte_size]") {
  REQUIRE_THROWS_WITH(parse_byte_size("--limit", "lots"),
                      "--limit: expected a size like 40MiB, 1.5GiB, 800KB or 65536, got 'lots'");
  REQUIRE_THROWS_WITH(parse_byte_size("--limit", "60XB"),
                      "--limit: expected a size like 40MiB, 1.5GiB, 800KB or 65536, got '60XB'");
  REQUIRE_THROWS_WITH(parse_byte_size("--limit", "0"), Catch::Matchers::Contains("--limit: the size must be positive, got '0'"));
  REQUIRE_THROWS_AS(parse_byte_size("--limit", "-1MiB"), Error);
}

TEST_CASE("byte_size_text prints bytes in the largest binary unit they reach", "[byte_size]") {
  CHECK(byte_size_text(512) == "512 B");
  CHECK(byte_size_text(320 * 1024) == "320.0 KiB");
  CHECK(byte_size_text(60 << 20) == "60.0 MiB");
  CHECK(byte_size_text(int64_t{3} << 29) == "1.50 GiB");
}

TEST_CASE("parse_byte_size refuses sizes that are not finite, under a byte or past int64, and never drops a unit",
          "[byte_size]") {
  REQUIRE_THROWS_WITH(parse_byte_size("--budget", "1e30"),
                      "--budget: the size must be below 8 EiB (int64 bytes), got '1e30'");
  REQUIRE_THROWS_WITH(parse_byte_size("--budget", "9000000000GiB"),
                      "--budget: the size must be below 8 EiB (int64 bytes), got '9000000000GiB'");
  REQUIRE_THROWS_WITH(parse_byte_size("--budget", "1e400"),
                      "--budget: the size must be below 8 EiB (int64 bytes), got '1e400'");
  REQUIRE_THROWS_WITH(parse_byte_size("--budget", "0.4"), "--budget: the size must be at least 1 byte, got '0.4'");
  for (const char* bad : {"inf", "nan", "infMiB", "40 MiB", "40M", "40mib", "0x10", " 40MiB", "MiB"})
    REQUIRE_THROWS_WITH(parse_byte_size("--budget", bad),
                        std::string("--budget: expected a size like 40MiB, 1.5GiB, 800KB or 65536, got '") + bad + "'");
  REQUIRE_THROWS_AS(parse_byte_size("--budget", "0.4"), UsageError);
  CHECK(parse_byte_size("--budget", "1e3") == 1000);
  CHECK(parse_byte_size("--budget", "0.5KiB") == 512);
}
