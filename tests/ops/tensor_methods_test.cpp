// Tests ops/tensor_methods.cpp: Tensor's value accessors (to_vector, item), conversions,
// the op methods and operators (each the functional op), equal, allclose and printing.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

TEST_CASE("to_vector and item: row-major values of any layout and dtype", "[tensor_methods]") {
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(a.to_vector() == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(a.t().to_vector() == std::vector<double>{1, 4, 2, 5, 3, 6});
  CHECK(a.slice(1, 0, 3, 2).to_vector() == std::vector<double>{1, 3, 4, 6});
  CHECK(a.slice(0, 1, 2).to_vector() == std::vector<double>{4, 5, 6});  // storage offset
  CHECK(tensor({7}, {1}).expand({3}).to_vector() == std::vector<double>{7, 7, 7});
  CHECK(tensor({-3, 4}, {2}, kLong).to_vector() == std::vector<double>{-3, 4});
  CHECK(tensor({1, 0}, {2}, kBool).to_vector() == std::vector<double>{1, 0});
  CHECK(tensor({0.5}, {1}, kBFloat16).to_vector() == std::vector<double>{0.5});
  CHECK(tensor({0.1}, {1}, kDouble).to_vector() == std::vector<double>{0.1});
  CHECK(zeros({0}).to_vector().empty());
  CHECK(scalar_tensor(2.5).item() == 2.5);
  CHECK(tensor({9}, {1, 1}).item() == 9);
  CHECK(a.slice(0, 1, 2).slice(1, 2, 3).item() == 6);
  REQUIRE_THROWS_WITH(a.item(), Contains("a Tensor with 6 elements cannot be converted to Scalar"));
  REQUIRE_THROWS_WITH(zeros({0}).item(), Contains("a Tensor with 0 elements cannot be converted to Scalar"));
  REQUIRE_THROWS_WITH(Tensor().item(), Contains("cannot be converted to Scalar"));
  REQUIRE_THROWS_WITH(Tensor().to_vector(), Contains("to_vector") && Contains("undefined"));
  REQUIRE_THROWS_WITH(meta({2, 3}).to_vector(), Contains("to_vector") && Contains("meta") && Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(meta({}).item(), Contains("meta"));
}

TEST_CASE("reading values is not an op call (dispatch modes and autograd do not see it)", "[tensor_methods]") {
  auto mode = std::make_shared<RecordingMode>();
  Tensor a = tensor({1, 2, 3, 4}, {2, 2}, kBFloat16).t();
  {
    DispatchModeGuard g(mode);
    a.to_vector();
    a.slice(0, 0, 1).slice(1, 0, 1).item();
  }
  CHECK(mode->calls.size() == 1);  // only the two slice calls, no copies or casts
  CHECK(mode->calls["aten::slice"] == 2);
}

TEST_CASE("to, clone, detach, contiguous methods", "[tensor_methods]") {
  Tensor a = tensor({1, 2, 3, 4}, {2, 2});
  CHECK(a.to(kFloat).is_same(a));
  CHECK(a.to(Device{kCPU}).is_same(a));
  CHECK(a.to(kDouble).dtype() == kDouble);
  CHECK(a.to(Device{kMeta}).is_meta());
  Tensor c = a.clone();
  CHECK_FALSE(c.is_alias_of(a));
  check_close(c, a);
  CHECK(a.contiguous().is_same(a));
  CHECK(a.t().contiguous().is_contiguous());
  check_values(a.t().contiguous(), {1, 3, 2, 4});
  Tensor x = leaf({2}, 1);
  CHECK_FALSE(x.detach().requires_grad());
  CHECK(x.detach().is_alias_of(x));
  // clone and to() are differentiable
  add(x.clone(), x.to(kFloat).to(kDouble)).sum().backward();
  check_values(x.grad(), {2, 2});
}

TEST_CASE("op methods are the functional ops", "[tensor_methods]") {
  Tensor p = add(abs(randn_seeded({3, 4}, 2, kFloat)), 0.5);
  Tensor q = randn_seeded({4, 2}, 3, kFloat);
  check_close(p.neg(), neg(p));
  check_close(p.exp(), exp(p));
  check_close(p.log(), log(p));
  check_close(p.sin(), sin(p));
  check_close(p.cos(), cos(p));
  check_close(p.tanh(), tanh(p));
  check_close(p.sigmoid(), sigmoid(p));
  check_close(p.relu(), relu(p));
  check_close(p.silu(), silu(p));
  check_close(p.sqrt(), sqrt(p));
  check_close(p.rsqrt(), rsqrt(p));
  check_close(p.abs(), abs(p));
  check_close(p.pow(3.0), pow(p, 3.0));
  check_close(p.sum(), sum(p));
  check_close(p.sum({1}, true), sum(p, {1}, true));
  check_close(p.mean(), mean(p));
  check_close(p.mean({0}), mean(p, {0}));
  check_close(p.amax(1), amax(p, 1));
  check_close(p.mm(q), mm(p, q));
  check_close(p.matmul(q), matmul(p, q));
  check_close(p.view({12}), view(p, {12}));
  check_close(p.reshape({2, 6}), reshape(p, {2, 6}));
  check_close(p.transpose(0, 1), transpose(p, 0, 1));
  check_close(p.t(), transpose(p, 0, 1));
  check_close(p.permute({1, 0}), permute(p, {1, 0}));
  check_close(p.slice(1, 1, 4, 2), slice(p, 1, 1, 4, 2));
  check_close(p.unsqueeze(1), unsqueeze(p, 1));
  check_close(p.unsqueeze(0).squeeze(0), p);
  check_close(p.slice(0, 0, 1).expand({3, 4}), expand(slice(p, 0, 0, 1), {3, 4}));
  Tensor mask = tensor({1, 0, 0, 1}, {4}, kBool);
  check_close(p.masked_fill(mask, 0.0), masked_fill(p, mask, 0.0));
  // each method is one op call of the same name
  auto mode = std::make_shared<RecordingMode>();
  {
    DispatchModeGuard g(mode);
    p.sin();
    p.t();
    p.amax(0);
  }
  CHECK(mode->calls["aten::sin"] == 1);
  CHECK(mode->calls["aten::t"] == 1);  // aten::t, as in PyTorch (one op, not transpose)
  CHECK(mode->calls["aten::amax"] == 1);
}

TEST_CASE("operators", "[tensor_methods]") {
  Tensor a = tensor({1, 2, 4}, {3}), b = tensor({2, 2, 2}, {3});
  check_values(a + b, {3, 4, 6});
  check_values(a - b, {-1, 0, 2});
  check_values(a * b, {2, 4, 8});
  check_values(a / b, {0.5, 1, 2});
  check_values(a + 1.0, {2, 3, 5});
  check_values(a - 1.0, {0, 1, 3});
  check_values(a * 2.0, {2, 4, 8});
  check_values(a / 2.0, {0.5, 1, 2});
  check_values(1.0 + a, {2, 3, 5});
  check_values(1.0 - a, {0, -1, -3});
  check_values(2.0 * a, {2, 4, 8});
  check_values(4.0 / a, {4, 2, 1});
  check_values(-a, {-1, -2, -4});
  // gradients through the operators
  Tensor x = leaf({3}, 4);
  REQUIRE(gradcheck1([](auto& v) { return (1.0 - v[0]) * (v[0] / 2.0) + 3.0 / (v[0] * v[0] + 1.0) - (-v[0]); }, {x}));
}

TEST_CASE("in-place methods return self", "[tensor_methods]") {
  Tensor a = zeros({3});
  int64_t v0 = a._version();
  CHECK(&a.add_(ones({3})) == &a);
  CHECK(&a.add_(1.0) == &a);
  CHECK(&a.mul_(tensor({1, 2, 3}, {3})) == &a);
  CHECK(&a.mul_(-1.0) == &a);
  check_values(a, {-2, -4, -6});
  CHECK(&a.relu_() == &a);
  check_values(a, {0, 0, 0});
  CHECK(&a.fill_(2.0) == &a);
  CHECK(&a.copy_(tensor({5, 6, 7}, {3})) == &a);
  check_values(a, {5, 6, 7});
  CHECK(&a.zero_() == &a);
  check_values(a, {0, 0, 0});
  CHECK(a._version() == v0 + 8);
}

TEST_CASE("equal and allclose", "[tensor_methods]") {
  Tensor a = tensor({1, 2, 3}, {3});
  CHECK(equal(a, tensor({1, 2, 3}, {3})));
  CHECK(equal(a, a.clone()));
  CHECK_FALSE(equal(a, tensor({1, 2, 3.0001}, {3})));
  CHECK_FALSE(equal(a, tensor({1, 2, 3}, {3, 1})));          // shape
  CHECK_FALSE(equal(a, tensor({1, 2, 3}, {3}, kDouble)));    // dtype
  CHECK(equal(tensor({1, 2, 3, 4}, {2, 2}).t(), tensor({1, 3, 2, 4}, {2, 2})));  // layout does not matter
  CHECK(equal(tensor({NAN, 1}, {2}), tensor({NAN, 1}, {2})));  // the same NaN in the same place
  CHECK_FALSE(equal(tensor({NAN, 1}, {2}), tensor({1, NAN}, {2})));
  CHECK(allclose(a, tensor({1, 2, 3.00001}, {3})));
  CHECK_FALSE(allclose(a, tensor({1, 2, 3.001}, {3})));
  CHECK(allclose(a, tensor({1, 2, 3.001}, {3}), 1e-3));
  CHECK(allclose(tensor({0}, {1}), tensor({1e-9}, {1})));
  CHECK_FALSE(allclose(tensor({0}, {1}), tensor({1e-7}, {1})));
  CHECK(allclose(tensor({0}, {1}), tensor({1e-7}, {1}), 0.0, 1e-6));
  CHECK_FALSE(allclose(a, tensor({1, 2, 3}, {1, 3})));
  CHECK_FALSE(allclose(tensor({NAN}, {1}), tensor({NAN}, {1})));
  CHECK(allclose(a, tensor({1, 2, 3}, {3}, kDouble)));  // values, whatever the dtype
}

TEST_CASE("printing a tensor", "[tensor_methods]") {
  auto print = [](const Tensor& t) {
    std::ostringstream os;
    os << t;
    return os.str();
  };
  CHECK(print(tensor({1, 2.5}, {2})) == "tensor([1, 2.5], size=[2], dtype=Float)");
  CHECK(print(tensor({1}, {1}, kDouble).requires_grad_()) == "tensor([1], size=[1], dtype=Double, requires_grad=True)");
  CHECK(print(meta({2, 3}, kBFloat16)) == "tensor(size=[2, 3], dtype=BFloat16, device=meta)");
  CHECK(print(Tensor()) == "[ Tensor (undefined) ]");
  CHECK(print(zeros({100})).find("size=[100]") != std::string::npos);
  CHECK(print(zeros({100})).find("[0, 0") == std::string::npos);  // large tensors print no values
  std::ostringstream os;
  os << Shape{2, 3};
  CHECK(os.str() == "[2, 3]");
  CHECK(zeros({2}).toString() == "CPUFloatType");
  CHECK(meta({2}, kLong).toString() == "MetaLongType");
}
