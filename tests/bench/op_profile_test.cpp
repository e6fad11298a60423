// Tests bench/op_profile.{h,cpp}: the per-op times of torch.profiler's key_averages().
#include <catch2/catch.hpp>

#include "bench/op_profile.h"

using namespace remat;
using remat::bench::OpProfile;
using Catch::Matchers::Contains;

TEST_CASE("OpProfile counts the leaf calls a mode sees, forward and backward, longest first", "[bench]") {
  auto profile = std::make_shared<OpProfile>();
  Tensor a = ones({64, 64}).requires_grad_(true), b = ones({64, 64});
  {
    DispatchModeGuard g(profile);
    for (int i = 0; i < 2; ++i) mm(a, b).sum().backward();
  }
  std::map<std::string, int64_t> calls;
  double previous = 1e30;
  for (const OpProfile::Row& r : profile->rows()) {
    calls[r.op] = r.calls;
    CHECK(r.seconds >= 0);
    CHECK(r.seconds <= previous);  // longest first
    previous = r.seconds;
  }
  CHECK(calls["aten::mm"] == 4);  // forward, and a's gradient in backward, twice
  CHECK(calls["aten::sum"] == 2);
  const std::string table = profile->table(2);
  CHECK_THAT(table, Contains("aten::mm"));
  CHECK_THAT(table, Contains("       2.0"));  // mm's calls per step
  CHECK_THAT(table, Contains("total"));
  CHECK_THAT(profile->table(2, 1), Contains("other ops)"));
}

TEST_CASE("OpProfile::table refuses a step count below one", "[bench]") {
  OpProfile profile;
  CHECK_THROWS_WITH(profile.table(0), Contains("OpProfile::table: expected steps >= 1, got 0"));
}
