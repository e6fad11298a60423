// Tests engine/cuda/cuda_exception.h: a failed CUDA call throws remat::Error naming the call,
// the error's name and its description (no GPU needed).
#include <catch2/catch.hpp>

#include "engine/cuda/cuda_exception.h"

TEST_CASE("REMAT_CUDA_CHECK throws remat::Error naming the call and the error", "[cuda_exception]") {
  auto fails = [] { return cudaErrorMemoryAllocation; };
  auto check = [&] { REMAT_CUDA_CHECK(fails()); };
  REQUIRE_THROWS_AS(check(), remat::Error);
  REQUIRE_THROWS_WITH(check(), Catch::Contains("CUDA error: out of memory") &&
                                                    Catch::Contains("(cudaErrorMemoryAllocation)") &&
                                                    Catch::Contains("in fails()") &&
                                                    Catch::Contains("cuda_exception_test.cpp"));
  REQUIRE_NOTHROW([] { REMAT_CUDA_CHECK(cudaSuccess); }());
}
