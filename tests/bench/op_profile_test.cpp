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

namespace {
// The bytes_moved of the one call of `op` a profile saw while f ran.
template <class F>
double bytes_of(const std::string& op, F f) {
  auto profile = std::make_shared<OpProfile>();
  {
    DispatchModeGuard g(profile);
    f();
  }
  for (const OpProfile::Row& r : profile->rows())
    if (r.op == op) {
      CHECK(r.calls == 1);
      return r.bytes;
    }
  FAIL("no call of " << op);
  return -1;
}
}  // namespace

TEST_CASE("OpProfile counts the bytes a call must move: inputs read, mutated inputs written, fresh outputs", "[bench]") {
  const Tensor a = ones({64, 64}), b = ones({64, 64}), row = ones({64});
  const double matrix = 64 * 64 * 4;
  CHECK(bytes_of("aten::add", [&] { add(a, b); }) == 3 * matrix);
  CHECK(bytes_of("aten::add", [&] { add(a, a); }) == 2 * matrix);  // one tensor passed twice is read once
  // a broadcast operand: its own 64 elements, not the 4096 it is expanded to
  CHECK(bytes_of("aten::add", [&] { add(a, row.expand({64, 64})); }) == 2 * matrix + 64 * 4);
  Tensor c = ones({64, 64});
  CHECK(bytes_of("aten::add_", [&] { c.add_(b); }) == 3 * matrix);  // c read and written, b read
  CHECK(bytes_of("aten::sum", [&] { a.sum(); }) == matrix + 4);
  CHECK(bytes_of("aten::view", [&] { a.view({4096}); }) == 0);  // a view moves nothing
  CHECK(bytes_of("aten::transpose", [&] { a.transpose(0, 1); }) == 0);
  CHECK(bytes_of("aten::clone", [&] { a.transpose(0, 1).clone(); }) == 2 * matrix);
}

TEST_CASE("OpProfile::roofline sets the ops other than matrix products against a copy bandwidth", "[bench]") {
  CHECK(OpProfile::is_matmul("aten::mm"));
  CHECK(OpProfile::is_matmul("aten::baddbmm"));
  CHECK_FALSE(OpProfile::is_matmul("aten::add"));
  auto profile = std::make_shared<OpProfile>();
  const Tensor a = ones({256, 256}), b = ones({256, 256});
  {
    DispatchModeGuard g(profile);
    for (int i = 0; i < 2; ++i) add(mm(a, b), b);
  }
  double add_bytes = 0;
  for (const OpProfile::Row& r : profile->rows())
    if (r.op == "aten::add") add_bytes = r.bytes;
  CHECK(add_bytes == 2 * 3 * 256 * 256 * 4);
  // per step (2 steps): 786432 bytes, which take 0.786 ms at 1 GB/s
  const std::string text = profile->roofline(2, 1e9);
  CHECK_THAT(text, Contains("matrix products (mm, addmm, bmm, ...): "));
  CHECK_THAT(text, Contains("moving 0.79 MB; at the copy bandwidth (1.0 GB/s) those bytes take 0.786 ms"));
  CHECK_THAT(profile->table(2), Contains("MB moved"));
  CHECK_THROWS_WITH(profile->roofline(0, 1e9), Contains("OpProfile::roofline: expected steps >= 1, got 0"));
  CHECK_THROWS_WITH(profile->roofline(1, 0), Contains("OpProfile::roofline: expected a copy bandwidth > 0, got 0"));
}
