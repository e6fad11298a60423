// Tests ops/cpu_utils.cpp: the raw conversions and copies backend kernels use (no dispatch).
#include <catch2/catch.hpp>

#include "ops/cpu_utils.h"
#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::ops;
using namespace remat::testing;

TEST_CASE("cast_cpu: self when the dtype matches, a converted copy otherwise", "[cpu_utils]") {
  Tensor a = tensor({1.5, -2.5, 3}, {3});
  CHECK(cast_cpu(a, kFloat).is_same(a));
  Tensor d = cast_cpu(a, kDouble);
  CHECK(d.dtype() == kDouble);
  check_values(d, {1.5, -2.5, 3});
  check_values(cast_cpu(a, kLong), {1, -2, 3});
  check_values(cast_cpu(a, kBool), {1, 1, 1});
  check_values(cast_cpu(a.slice(0, 0, 3, 2), kBFloat16), {1.5, 3});
  Tensor m = cast_cpu(meta({2, 2}), kHalf);
  CHECK(m.is_meta());
  CHECK(m.dtype() == kHalf);
}

TEST_CASE("contiguous_cpu: self when contiguous, a contiguous copy otherwise", "[cpu_utils]") {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(contiguous_cpu(a).is_same(a));
  Tensor c = contiguous_cpu(a.t());
  CHECK(c.is_contiguous());
  CHECK_FALSE(c.is_alias_of(a));
  check_values(c, {1, 4, 2, 5, 3, 6});
  check_values(contiguous_cpu(a.slice(1, 1, 3)), {2, 3, 5, 6});
  check_values(contiguous_cpu(tensor({7, 8}, {2, 1}).expand({2, 2})), {7, 7, 8, 8});
}

TEST_CASE("copy_into_cpu: broadcasts and converts into a strided destination", "[cpu_utils]") {
  Tensor out = zeros({2, 3}, kDouble);
  copy_into_cpu(out, tensor({1, 2, 3}, {3}, kLong));
  check_values(out, {1, 2, 3, 1, 2, 3});
  Tensor base = zeros({3, 4});
  copy_into_cpu(base.t().slice(0, 0, 4, 3), tensor({1, 2, 3, 4, 5, 6}, {2, 3}));
  check_values(base, {1, 0, 0, 4, 2, 0, 0, 5, 3, 0, 0, 6});
  // empty and Meta destinations are no-ops
  copy_into_cpu(zeros({0, 3}), zeros({3}));
  copy_into_cpu(meta({2, 3}), zeros({3}));
}

TEST_CASE("the raw helpers are not op calls", "[cpu_utils]") {
  auto mode = std::make_shared<RecordingMode>();
  Tensor a = tensor({1, 2, 3, 4}, {2, 2});
  Tensor t = a.t();
  {
    DispatchModeGuard g(mode);
    cast_cpu(t, kDouble);
    contiguous_cpu(t);
    copy_into_cpu(zeros({2, 2}), t);  // zeros() is an op call (aten::zeros)
  }
  CHECK(mode->calls.size() == 1);
  CHECK(mode->calls["aten::zeros"] == 1);
}
