// Tests kernels/cpu/cpu_model.h against the kernel's own reading of CPUID (/proc/cpuinfo).
#include "kernels/cpu/cpu_model.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

using namespace remat::kernels;

namespace {
// The first value of a /proc/cpuinfo field ("vendor_id", "cpu family"), or "" where there is none.
std::string cpuinfo_field(const std::string& name) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, name.size(), name) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}
}  // namespace

TEST_CASE("amd_family is /proc/cpuinfo's cpu family on AMD and 0 elsewhere", "[cpu_model]") {
  const std::string vendor = cpuinfo_field("vendor_id");
  REQUIRE(!vendor.empty());  // Linux on x86, as every machine this builds on
  if (vendor == "AuthenticAMD") {
    CHECK(cpu::amd_family() == static_cast<unsigned>(std::stoul(cpuinfo_field("cpu family"))));
  } else {
    CHECK(cpu::amd_family() == 0);
  }
}

TEST_CASE("AMD from family 0x19 on, and Zen 5 and later, by the family number", "[cpu_model]") {
  CHECK(cpu::amd_family_19h_or_later() == (cpu::amd_family() >= 0x19));
  CHECK((cpu::amd_zen5_or_later() && !cpu::amd_family_19h_or_later()) == false);  // 0x1A is past 0x19
}

TEST_CASE("float sums read 512 bits a load exactly on AMD Zen 5 and later (family 0x1A up)", "[cpu_model]") {
  CHECK(cpu::amd_zen5_or_later() == (cpu::amd_family() >= 0x1A));
  CHECK(cpu::float_sums_read_512_bits() == cpu::amd_zen5_or_later());
}

TEST_CASE("intel_cpu is true exactly where /proc/cpuinfo's vendor is GenuineIntel", "[cpu_model]") {
  const std::string vendor = cpuinfo_field("vendor_id");
  REQUIRE(!vendor.empty());
  CHECK(cpu::intel_cpu() == (vendor == "GenuineIntel"));
  CHECK(!(cpu::intel_cpu() && cpu::amd_family() != 0));
}
