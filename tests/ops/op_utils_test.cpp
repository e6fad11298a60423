// Tests ops/op_utils.cpp: broadcasting, device and dtype checks, and the LoopShape a CPU kernel
// iterates (broadcast strides, coalescing).
#include <catch2/catch.hpp>

#include "ops/op_utils.h"
#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::ops;
using namespace remat::testing;
using Catch::Contains;

TEST_CASE("broadcast_shapes: PyTorch's rules", "[op_utils]") {
  CHECK(broadcast_shapes("op", {2, 1, 3}, {4, 1}) == Shape{2, 4, 3});
  CHECK(broadcast_shapes("op", {4, 1}, {2, 1, 3}) == Shape{2, 4, 3});
  CHECK(broadcast_shapes("op", {}, {2, 3}) == Shape{2, 3});
  CHECK(broadcast_shapes("op", {}, {}) == Shape{});
  CHECK(broadcast_shapes("op", {0, 1}, {1, 5}) == Shape{0, 5});
  CHECK(broadcast_shapes("op", {3}, {3}) == Shape{3});
  REQUIRE_THROWS_WITH(broadcast_shapes("aten::foo", {2, 3}, {3, 2}),
                      Contains("aten::foo: The size of tensor a (3) must match the size of tensor b (2) at non-singleton "
                               "dimension 1 (shapes [2, 3] and [3, 2])"));
  REQUIRE_THROWS_WITH(broadcast_shapes("aten::foo", {0}, {2}), Contains("(0)") && Contains("(2)"));
}

TEST_CASE("device, dim and dtype checks name the op", "[op_utils]") {
  Tensor c = zeros({2}), m = meta({2});
  CHECK(common_device("op", {&c, &c}) == Device{kCPU});
  CHECK(common_device("op", {&m}) == Device{kMeta});
  Tensor undefined;
  CHECK(common_device("op", {&undefined, &m}) == Device{kMeta});  // undefined tensors are skipped
  CHECK(common_device("op", {&undefined}) == Device{kCPU});
  REQUIRE_THROWS_WITH(common_device("aten::foo", {&c, &m}),
                      Contains("aten::foo: Expected all tensors to be on the same device, but found at least two devices, cpu and meta!"));
  REQUIRE_THROWS_WITH(check_defined("aten::foo", undefined, "weight"), Contains("aten::foo: argument 'weight' is an undefined tensor"));
  CHECK_NOTHROW(check_dim("aten::foo", c, 1, "self"));
  REQUIRE_THROWS_WITH(check_dim("aten::foo", c, 2, "self"),
                      Contains("aten::foo: expected 'self' to be a 2-D tensor, but got a 1-D tensor of shape [2]"));
  CHECK_NOTHROW(check_floating("op", zeros({1}, kBFloat16), "self"));
  REQUIRE_THROWS_WITH(check_floating("aten::foo", zeros({1}, kLong), "self"),
                      Contains("aten::foo: expected 'self' to have a floating point dtype, but got Long"));
  REQUIRE_THROWS_WITH(check_same_dtype("aten::foo", zeros({1}), zeros({1}, kDouble)),
                      Contains("aten::foo: expected both arguments to have the same dtype, but got Float and Double"));
}

TEST_CASE("broadcast_strides and prod", "[op_utils]") {
  Tensor a = zeros({3, 1});
  CHECK(broadcast_strides(a, {2, 3, 4}) == Shape{0, 1, 0});
  Tensor t = zeros({4, 3}).t();  // [3,4] strides [1,3]
  CHECK(broadcast_strides(t, {2, 3, 4}) == Shape{0, 1, 3});
  CHECK(prod({2, 3, 4}, 0, 3) == 24);
  CHECK(prod({2, 3, 4}, 1, 2) == 3);
  CHECK(prod({2, 3, 4}, 2, 10) == 4);
  CHECK(prod({2, 3}, 2, 2) == 1);
}

TEST_CASE("make_loop: broadcasting with zero strides, then coalescing", "[op_utils]") {
  Tensor out = zeros({2, 3, 4});
  Tensor same = zeros({2, 3, 4});
  auto flat = make_loop(out, {&same});
  CHECK(flat.ndim == 1);  // contiguous operands of one shape: one flat loop
  CHECK(flat.sizes[0] == 24);
  CHECK(flat.is_contiguous());
  Tensor row = zeros({4});
  auto l = make_loop(out, {&row});
  CHECK(l.ndim == 2);  // [6, 4]: the two outer dims merge (the row's strides are 0 there)
  CHECK(l.sizes[0] == 6);
  CHECK(l.sizes[1] == 4);
  CHECK(l.strides[1][0] == 0);
  CHECK(l.strides[1][1] == 1);
  CHECK_FALSE(l.is_contiguous());
  Tensor col = zeros({3, 1});
  auto c = make_loop(out, {&col});
  CHECK(c.ndim == 3);
  CHECK(c.strides[1][0] == 0);
  CHECK(c.strides[1][1] == 1);
  CHECK(c.strides[1][2] == 0);
  // size-1 dims drop out; a 0-d output is a zero-dim loop
  Tensor one = zeros({1, 5, 1});
  auto o = make_loop(one, {&one});
  CHECK(o.ndim == 1);
  CHECK(o.sizes[0] == 5);
  Tensor s = scalar_tensor(1.0);
  CHECK(make_loop(s, {&s}).ndim == 0);
  CHECK(make_loop(s, {&s}).numel() == 1);
  // too many dims
  Tensor big = empty(Shape(17, 1));
  REQUIRE_THROWS_WITH(make_loop(big, {}), Contains("tensors of more than 16 dims are not supported (got 17)"));
  CHECK(empty_from({{2, 3}, kDouble, Device{kMeta}}).is_meta());
  CHECK(empty_from({{2, 3}, kDouble, Device{kCPU}}).dtype() == kDouble);
}

TEST_CASE("ops on tensors of 16 dims work, 17 are refused", "[op_utils]") {
  Shape s16(16, 1);
  s16[0] = 2;
  s16[15] = 3;
  Tensor a = ones(s16);
  CHECK(sum(add(a, a)).item() == 12);
  Shape s17(17, 1);
  REQUIRE_THROWS_WITH(ones(s17), Contains("more than 16 dims"));
  REQUIRE_THROWS_WITH(sin(empty(s17)), Contains("more than 16 dims"));
}
