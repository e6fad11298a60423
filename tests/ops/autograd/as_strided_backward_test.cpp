// Tests ops/autograd/as_strided_backward.cpp: the gradient of as_strided with respect to its
// input (placement through the storage, stride-0 views, inputs with an offset or gaps, the
// geometries it refuses), and its second derivative.
#include <catch2/catch.hpp>

#include "ops/autograd/as_strided_backward.h"
#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;
using ops::autograd::as_strided_backward;

TEST_CASE("as_strided_backward: the gradient lands on the elements the view read", "[as_strided_backward]") {
  Tensor g = tensor({1, 2, 3, 4}, {2, 2}, kDouble);
  // input: a contiguous [2, 3]; view: elements 1, 2, 4, 5 of the storage
  Tensor r = as_strided_backward(g, TensorGeometry({2, 3}, {3, 1}, 0), {2, 2}, {3, 1}, 1);
  REQUIRE(r.sizes() == Shape{2, 3});
  check_values(r, {0, 1, 2, 0, 3, 4});
  // a transposed view of the same elements
  check_values(as_strided_backward(g, TensorGeometry({2, 3}, {3, 1}, 0), {2, 2}, {1, 3}, 1), {0, 1, 3, 0, 2, 4});
}

TEST_CASE("as_strided_backward: an element read through a stride-0 dim gets the sum", "[as_strided_backward]") {
  Tensor g = tensor({1, 2, 3, 4, 5, 6}, {3, 2}, kDouble);
  // view [3, 2] with strides [0, 1] at offset 1: three reads each of elements 1 and 2
  check_values(as_strided_backward(g, TensorGeometry({4}, {1}, 0), {3, 2}, {0, 1}, 1), {0, 9, 12, 0});
}

TEST_CASE("as_strided_backward: inputs with an offset, gaps, or a view beyond them", "[as_strided_backward]") {
  Tensor g = tensor({1, 2, 3}, {3}, kDouble);
  // input: every other element from offset 2 (elements 2, 4, 6); view: elements 3, 4, 5
  check_values(as_strided_backward(g, TensorGeometry({3}, {2}, 2), {3}, {1}, 3), {0, 2, 0});
  // view before the input's first element
  check_values(as_strided_backward(g, TensorGeometry({2}, {1}, 2), {3}, {1}, 0), {3, 0});
  // empty view or input
  check_values(as_strided_backward(tensor({}, {0}, kDouble), TensorGeometry({2}, {1}, 0), {0}, {1}, 0), {0, 0});
  REQUIRE(as_strided_backward(g, TensorGeometry({0, 2}, {2, 1}, 0), {3}, {1}, 0).sizes() == Shape{0, 2});
}

TEST_CASE("as_strided_backward: geometries that reuse elements are refused", "[as_strided_backward][errors]") {
  Tensor g = ones({2, 2}, kDouble);
  REQUIRE_THROWS_WITH(as_strided_backward(g, TensorGeometry({4}, {1}, 0), {2, 2}, {1, 1}, 0),
                      "as_strided_backward: the view (sizes [2, 2], strides [1, 1]) reads some elements more than "
                      "once; remat supports that only along dims of stride 0");
  REQUIRE_THROWS_WITH(as_strided_backward(g, TensorGeometry({2, 2}, {0, 1}, 0), {2, 2}, {2, 1}, 0),
                      "as_strided_backward: the input (sizes [2, 2], strides [0, 1]) has elements that share memory; "
                      "its gradient is ambiguous");
  // through the op: as_strided of an expanded tensor
  Tensor x = tensor({1, 2}, {2}, kDouble).requires_grad_();
  Tensor y = x.expand({3, 2}).as_strided({2}, {1}, 0);
  REQUIRE_THROWS_WITH(y.sum().backward(), Contains("has elements that share memory"));
}

TEST_CASE("as_strided: gradients and second derivatives through the op", "[as_strided_backward][gradcheck]") {
  Tensor x = leaf({3, 4}, 5);
  REQUIRE(gradcheck1([](auto& v) { return v[0].as_strided({2, 3}, {4, 1}, 1); }, {x}));
  REQUIRE(gradcheck1([](auto& v) { return v[0].as_strided({3, 2}, {0, 4}, 2); }, {x}));
  REQUIRE(gradgradcheck1([](auto& v) { return mul(v[0].as_strided({2, 2}, {1, 4}, 3), v[0].narrow(0, 0, 2).narrow(1, 0, 2)); },
                         {x}));
  // the grad_fn a stride-0 view gets back after an in-place op on its base
  Tensor w = tensor({1, 2, 3}, {3}, kDouble).requires_grad_();
  Tensor base = w * 1.0;
  Tensor expanded = base.expand({2, 3});
  base.mul_(2.0);
  REQUIRE(expanded.grad_fn()->name() == "AsStridedBackward0");
  expanded.sum().backward();
  check_values(w.grad(), {4, 4, 4});
}
