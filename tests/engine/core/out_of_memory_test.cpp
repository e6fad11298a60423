// Tests engine/core/out_of_memory.h (no PyTorch counterpart as one file): a failed allocation of a
// known size, outside remat's allocators, is one Error naming the bytes and what they were for.
#include <catch2/catch.hpp>

#include <new>
#include <string>

#include "remat.h"

using namespace remat;

TEST_CASE("needing_bytes: a std::bad_alloc becomes 'out of memory: needed N bytes for X'", "[out_of_memory]") {
  CHECK_THROWS_WITH(needing_bytes(1099511627776, "the contents of 'big.safetensors'", []() -> int { throw std::bad_alloc(); }),
                    "out of memory: needed 1099511627776 bytes for the contents of 'big.safetensors'");
  // A size past max_size() throws std::length_error, reported the same way.
  std::string s;
  const uint64_t too_many = static_cast<uint64_t>(s.max_size()) + 1;
  CHECK_THROWS_WITH(needing_bytes(too_many, "a string", [&] { s.reserve(s.max_size() + 1); }),
                    "out of memory: needed " + std::to_string(too_many) + " bytes for a string");
  // Otherwise f's value, and nothing else happens.
  CHECK(needing_bytes(8, "eight bytes", [] { return 42; }) == 42);
}

TEST_CASE("check_fits_in_memory refuses more than this machine's memory, naming both", "[out_of_memory]") {
  const uint64_t memory = physical_memory_bytes();
  REQUIRE(memory > 0);
  CHECK_NOTHROW(check_fits_in_memory(memory, "all of it"));
  CHECK_THROWS_WITH(check_fits_in_memory(memory + 1, "one byte more"),
                    "out of memory: needed " + std::to_string(memory + 1) + " bytes for one byte more, more than this "
                    "machine's " + std::to_string(memory) + " bytes of memory");
}
