// Tests ops/view_ops.cpp: view, reshape, transpose, permute, slice, unsqueeze, squeeze, expand,
// as_strided, select, narrow, view_as, unbind, split, split_with_sizes, chunk, detach, contiguous
// (geometry, aliasing and the shared version counter, autograd view tracking, values,
// gradients, Meta, errors) and their derivative rules.
#include <catch2/catch.hpp>

#include <limits>

#include "remat.h"
#include "tests/testing/op_counter.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {
constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
// 0, 1, ..., n-1 as float, in shape
Tensor iota(const Shape& shape) { return arange(shape_numel(shape), kFloat).view(shape); }
}  // namespace

TEST_CASE("view: sizes, strides, -1, aliasing", "[views]") {
  Tensor a = iota({2, 3, 4});
  Tensor v = a.view({6, 4});
  CHECK(v.sizes() == Shape{6, 4});
  CHECK(v.strides() == Shape{4, 1});
  CHECK(v.is_alias_of(a));
  CHECK(v.storage_offset() == 0);
  CHECK(a.view({-1}).sizes() == Shape{24});
  CHECK(a.view({4, -1}).sizes() == Shape{4, 6});
  CHECK(a.view({2, 1, -1, 1}).sizes() == Shape{2, 1, 12, 1});
  check_values(a.view({4, 6}).slice(0, 1, 2), {6, 7, 8, 9, 10, 11});
  // a strided but viewable input: rows of stride 8 split into [2, 4]
  Tensor rows = iota({4, 8}).slice(0, 0, 4, 2);  // [2, 8], strides [16, 1]
  Tensor rv = rows.view({2, 2, 4});
  CHECK(rv.strides() == Shape{16, 4, 1});
  check_values(rv, {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23});
  // the transpose of a [1, n] tensor is viewable as [n]
  CHECK(iota({1, 5}).t().view({5}).sizes() == Shape{5});
  // 0-d <-> [1]
  Tensor s = scalar_tensor(3.0);
  CHECK(s.view({1}).sizes() == Shape{1});
  CHECK(s.view({1, 1}).view({}).dim() == 0);
  CHECK(zeros({0, 3}).view({3, 0}).sizes() == Shape{3, 0});
}

TEST_CASE("views share storage and the version counter with their base", "[views]") {
  Tensor a = zeros({2, 3});
  std::vector<Tensor> views = {a.view({3, 2}), a.t(), a.permute({1, 0}), a.slice(1, 0, 3, 2), a.unsqueeze(0),
                               a.unsqueeze(1).squeeze(1), a.expand({4, 2, 3}), a.reshape({6}), a.detach(),
                               a.contiguous(), transpose(a, 0, 1).transpose(0, 1).view({6, 1}).squeeze(1)};
  for (size_t i = 0; i < views.size(); ++i) {
    INFO("view " << i);
    CHECK(views[i].is_alias_of(a));
  }
  std::vector<int64_t> before;
  for (const Tensor& v : views) before.push_back(v._version());
  a.add_(1.0);
  for (size_t i = 0; i < views.size(); ++i) {
    INFO("view " << i);
    CHECK(views[i]._version() == before[i] + 1);
  }
  // writes through a view are visible in the base, and the base's version moves
  int64_t v0 = a._version();
  views[3].fill_(5.0);  // columns 0 and 2
  CHECK(a._version() == v0 + 1);
  check_values(a, {5, 1, 5, 5, 1, 5});
  views[1].mul_(2.0);
  check_values(a, {10, 2, 10, 10, 2, 10});
  check_values(views[6].slice(0, 3, 4), {10, 2, 10, 10, 2, 10});
}

TEST_CASE("reshape: a view when possible, a copy otherwise", "[views]") {
  Tensor a = iota({2, 3});
  Tensor r = a.reshape({3, 2});
  CHECK(r.is_alias_of(a));
  Tensor t = a.t();  // [3,2] strides [1,3]
  Tensor c = t.reshape({6});
  CHECK_FALSE(c.is_alias_of(a));
  CHECK(c.is_contiguous());
  check_values(c, {0, 3, 1, 4, 2, 5});
  check_values(reshape(t, {2, -1}), {0, 3, 1, 4, 2, 5});
  CHECK(t.reshape({3, 2}).is_alias_of(a));
  REQUIRE_THROWS_WITH(a.reshape({4, -1}), Contains("aten::reshape") && Contains("[4, -1]") && Contains("invalid for input of size 6"));
}

TEST_CASE("t and _unsafe_view: one op each, as PyTorch's linear and matmul issue them", "[views]") {
  Tensor a = iota({2, 3});
  Tensor t = remat::t(a);
  CHECK(t.sizes() == Shape{3, 2});
  CHECK(t.strides() == Shape{1, 3});
  CHECK(t.is_alias_of(a));
  CHECK(remat::t(iota({4})).sizes() == Shape{4});  // at most 2-D: a 1-D tensor as it is
  REQUIRE_THROWS_WITH(remat::t(iota({2, 3, 4})),
                      Contains("aten::t: t() expects a tensor with <= 2 dimensions, but self is 3D"));
  // _unsafe_view: view's geometry, sharing storage, but no view autograd tracks
  Tensor u = _unsafe_view(a, {3, 2});
  CHECK(u.sizes() == Shape{3, 2});
  CHECK(u.is_alias_of(a));
  CHECK_FALSE(u.is_view());
  check_values(u, {0, 1, 2, 3, 4, 5});
  REQUIRE_THROWS_WITH(_unsafe_view(t, {6}), Contains("aten::_unsafe_view: view size is not compatible with input "
                                                     "tensor's size and stride (input [3, 2] with strides [1, 3], size [6])"));
  // reshape of a layout no view expresses: clone, then _unsafe_view (PyTorch's calls)
  CountOps ops;
  Tensor c = t.reshape({6});
  CHECK(ops.counter->order == std::vector<std::string>{"aten::clone", "aten::_unsafe_view"});
  CHECK_FALSE(c.is_view());
}

TEST_CASE("transpose and permute: sizes, strides, values", "[views]") {
  Tensor a = iota({2, 3, 4});
  Tensor t = a.transpose(0, 2);
  CHECK(t.sizes() == Shape{4, 3, 2});
  CHECK(t.strides() == Shape{1, 4, 12});
  CHECK_FALSE(t.is_contiguous());
  CHECK(a.transpose(-1, -3).strides() == Shape{1, 4, 12});
  CHECK(a.transpose(1, 1).strides() == a.strides());
  check_values(a.transpose(1, 2).contiguous().slice(0, 0, 1), {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  CHECK(iota({2, 3}).t().sizes() == Shape{3, 2});
  check_values(iota({2, 3}).t(), {0, 3, 1, 4, 2, 5});
  CHECK(transpose(scalar_tensor(1.0), 0, -1).dim() == 0);
  Tensor p = a.permute({2, 0, 1});
  CHECK(p.sizes() == Shape{4, 2, 3});
  CHECK(p.strides() == Shape{1, 12, 4});
  check_values(p.slice(0, 1, 2), {1, 5, 9, 13, 17, 21});
  CHECK(a.permute({-1, -3, -2}).sizes() == Shape{4, 2, 3});
}

TEST_CASE("slice: start, end, step, negative and out-of-range bounds", "[views]") {
  Tensor a = iota({10});
  check_values(a.slice(0, 2, 5), {2, 3, 4});
  check_values(a.slice(0, 1, 8, 3), {1, 4, 7});
  check_values(a.slice(0, 0, kEnd, 4), {0, 4, 8});
  check_values(a.slice(0, -3, kEnd), {7, 8, 9});
  check_values(a.slice(0, -4, -1), {6, 7, 8});
  check_values(a.slice(0, 8, 100), {8, 9});
  check_values(a.slice(0, -100, 2), {0, 1});
  CHECK(a.slice(0, 5, 3).sizes() == Shape{0});
  CHECK(a.slice(0, 12, 20).sizes() == Shape{0});
  CHECK(a.slice(0, 1, 8, 3).strides() == Shape{3});
  CHECK(a.slice(0, 1, 8, 3).storage_offset() == 1);
  Tensor m = iota({3, 4});
  Tensor s = m.slice(1, 1, 4, 2);
  CHECK(s.sizes() == Shape{3, 2});
  CHECK(s.strides() == Shape{4, 2});
  check_values(s, {1, 3, 5, 7, 9, 11});
  check_values(m.slice(-2, 1, 3).slice(-1, 2, 4), {6, 7, 10, 11});
  // slicing a slice composes offsets
  Tensor ss = m.slice(0, 1, 3).slice(1, 1, 4, 2);
  CHECK(ss.storage_offset() == 5);
  check_values(ss, {5, 7, 9, 11});
}

TEST_CASE("unsqueeze, squeeze, expand: sizes and strides", "[views]") {
  Tensor a = iota({2, 3});
  CHECK(a.unsqueeze(0).sizes() == Shape{1, 2, 3});
  CHECK(a.unsqueeze(1).sizes() == Shape{2, 1, 3});
  CHECK(a.unsqueeze(2).sizes() == Shape{2, 3, 1});
  CHECK(a.unsqueeze(-1).sizes() == Shape{2, 3, 1});
  CHECK(a.unsqueeze(-3).sizes() == Shape{1, 2, 3});
  CHECK(a.unsqueeze(1).strides() == Shape{3, 3, 1});
  CHECK(a.unsqueeze(2).strides() == Shape{3, 1, 1});
  CHECK(scalar_tensor(1.0).unsqueeze(0).sizes() == Shape{1});
  Tensor b = iota({2, 1, 3, 1});
  CHECK(b.squeeze(1).sizes() == Shape{2, 3, 1});
  CHECK(b.squeeze(-1).sizes() == Shape{2, 1, 3});
  CHECK(b.squeeze(0).sizes() == Shape{2, 1, 3, 1});  // size 2: unchanged
  CHECK(scalar_tensor(1.0).squeeze(0).dim() == 0);
  CHECK(iota({1}).squeeze(0).dim() == 0);
  Tensor c = tensor({1, 2, 3}, {3, 1});
  Tensor e = c.expand({2, 3, 4});
  CHECK(e.sizes() == Shape{2, 3, 4});
  CHECK(e.strides() == Shape{0, 1, 0});
  check_values(e.slice(0, 1, 2), {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3});
  CHECK(c.expand({-1, 5}).sizes() == Shape{3, 5});
  CHECK(c.expand({3, 1}).strides() == c.strides());
  CHECK(scalar_tensor(7.0).expand({2, 2}).to_vector() == std::vector<double>{7, 7, 7, 7});
  CHECK(c.expand({0, 3, 1}).numel() == 0);
}

TEST_CASE("detach and contiguous", "[views]") {
  Tensor x = leaf({2, 3}, 1);
  Tensor d = x.detach();
  CHECK_FALSE(d.requires_grad());
  CHECK(d.is_alias_of(x));
  CHECK(d.is_leaf());
  Tensor h = mul(x, 2.0);
  CHECK_FALSE(h.detach().requires_grad());
  CHECK(h.detach().grad_fn() == nullptr);
  // contiguous: self when already contiguous, a copy otherwise
  Tensor a = iota({2, 3});
  CHECK(a.contiguous().is_same(a));
  CHECK(contiguous(a).is_alias_of(a));
  Tensor t = a.t();
  Tensor c = contiguous(t);
  CHECK_FALSE(c.is_alias_of(a));
  CHECK(c.is_contiguous());
  CHECK(c.strides() == Shape{2, 1});
  check_values(c, {0, 3, 1, 4, 2, 5});
  CHECK(t.contiguous().is_contiguous());
}

// ---------------------------------------------------------------------------------------------
// gradients
// ---------------------------------------------------------------------------------------------

TEST_CASE("view gradients: values", "[views][autograd]") {
  Tensor x = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, TensorOptions().dtype(kDouble).requires_grad(true));
  Tensor w = tensor({1, 2, 3, 4, 5, 6}, {3, 2}, kDouble);
  mul(x.t(), w).sum().backward();
  check_values(x.grad(), {1, 3, 5, 2, 4, 6});
  Tensor y = from_vector({1, 2, 3, 4, 5, 6}, {6}, TensorOptions().dtype(kDouble).requires_grad(true));
  y.slice(0, 1, 6, 2).sum().backward();
  check_values(y.grad(), {0, 1, 0, 1, 0, 1});
  Tensor z = from_vector({1, 2}, {2, 1}, TensorOptions().dtype(kDouble).requires_grad(true));
  z.expand({3, 2, 4}).sum().backward();
  REQUIRE(z.grad().sizes() == Shape{2, 1});
  check_values(z.grad(), {12, 12});
}

TEST_CASE("gradcheck: every view op, on contiguous and strided inputs", "[views][gradcheck]") {
  Tensor c = leaf({2, 3, 4}, 11);
  Tensor t = transposed_leaf({3, 4}, 12), s = stepped_leaf({3, 4}, 13);
  std::vector<std::pair<const char*, Fn>> on3d = {
      {"view", [](auto& x) { return x[0].view({6, 4}); }},
      {"view -1", [](auto& x) { return x[0].view({-1, 2}); }},
      {"reshape", [](auto& x) { return x[0].reshape({4, 6}); }},
      {"transpose", [](auto& x) { return x[0].transpose(0, 2); }},
      {"transpose neg", [](auto& x) { return x[0].transpose(-1, 1); }},
      {"permute", [](auto& x) { return x[0].permute({2, 0, 1}); }},
      {"permute neg", [](auto& x) { return x[0].permute({-1, -3, -2}); }},
      {"slice", [](auto& x) { return x[0].slice(2, 1, 4); }},
      {"slice step", [](auto& x) { return x[0].slice(1, 0, kEnd, 2); }},
      {"slice neg", [](auto& x) { return x[0].slice(-1, -3, -1, 2); }},
      {"unsqueeze", [](auto& x) { return x[0].unsqueeze(1); }},
      {"unsqueeze neg", [](auto& x) { return x[0].unsqueeze(-1); }},
      {"squeeze", [](auto& x) { return x[0].unsqueeze(2).squeeze(2); }},
      {"squeeze noop", [](auto& x) { return x[0].squeeze(0); }},
      {"expand", [](auto& x) { return x[0].unsqueeze(0).expand({2, 2, 3, 4}); }},
      {"expand -1", [](auto& x) { return x[0].slice(1, 0, 1).expand({-1, 3, -1}); }},
      {"contiguous", [](auto& x) { return x[0].transpose(0, 1).contiguous(); }},
      {"clone", [](auto& x) { return x[0].clone(); }},
  };
  for (auto& [name, fn] : on3d) {
    INFO(name);
    REQUIRE(gradcheck1(fn, {c}));
  }
  std::vector<std::pair<const char*, Fn>> on2d = {
      {"view", [](auto& x) { return x[0].unsqueeze(0).view({1, 3, 4}); }},
      {"reshape (copying)", [](auto& x) { return x[0].reshape({12}); }},
      {"reshape (copying) 2", [](auto& x) { return x[0].reshape({2, -1}); }},
      {"t", [](auto& x) { return x[0].t(); }},
      {"permute", [](auto& x) { return x[0].permute({1, 0}); }},
      {"slice step", [](auto& x) { return x[0].slice(1, 1, 4, 2); }},
      {"unsqueeze", [](auto& x) { return x[0].unsqueeze(0); }},
      {"expand", [](auto& x) { return x[0].expand({2, 3, 4}); }},
      {"contiguous", [](auto& x) { return x[0].contiguous(); }},
      {"chain", [](auto& x) { return x[0].t().unsqueeze(0).expand({2, 4, 3}).slice(2, 0, 3, 2).reshape({-1}); }},
  };
  for (auto& [name, fn] : on2d) {
    INFO(name);
    REQUIRE(gradcheck1(fn, {t}));
    REQUIRE(gradcheck1(fn, {s}));
  }
  REQUIRE(gradgradcheck1([](auto& x) { return mul(x[0].t().reshape({-1}), x[0].reshape({-1})); }, {leaf({2, 3}, 14)}));
}

TEST_CASE("as_strided, select, narrow, view_as: geometry and values", "[views]") {
  Tensor a = iota({3, 4});
  Tensor s = a.as_strided({2, 2}, {4, 1}, 5);
  CHECK(s.strides() == Shape{4, 1});
  CHECK(s.storage_offset() == 5);
  check_values(s, {5, 6, 9, 10});
  check_values(a.slice(0, 1, 3).as_strided({2}, {1}), {4, 5});  // the view's own offset by default
  check_values(a.as_strided({3}, {0}, 2), {2, 2, 2});           // a stride-0 (expanded) view
  Tensor r = a.select(0, 1);
  CHECK(r.sizes() == Shape{4});
  CHECK(r.storage_offset() == 4);
  check_values(r, {4, 5, 6, 7});
  check_values(a.select(1, -1), {3, 7, 11});
  check_values(a.narrow(1, 1, 2), {1, 2, 5, 6, 9, 10});
  check_values(a.narrow(0, -1, 1), {8, 9, 10, 11});
  CHECK(a.view_as(zeros({2, 6})).sizes() == Shape{2, 6});
  for (const Tensor& v : {s, r, a.narrow(1, 1, 2), a.view_as(a)}) CHECK(v.is_alias_of(a));
}

TEST_CASE("unbind, split, split_with_sizes, chunk: pieces of one tensor", "[views]") {
  Tensor a = iota({3, 4});
  std::vector<Tensor> rows = a.unbind();
  REQUIRE(rows.size() == 3);
  check_values(rows[2], {8, 9, 10, 11});
  std::vector<Tensor> cols = a.unbind(-1);
  REQUIRE(cols.size() == 4);
  check_values(cols[1], {1, 5, 9});
  std::vector<Tensor> parts = a.split(3, 1);  // sizes 3, 1
  REQUIRE(parts.size() == 2);
  CHECK(parts[0].sizes() == Shape{3, 3});
  check_values(parts[1], {3, 7, 11});
  std::vector<Tensor> sized = split_with_sizes(a, {1, 0, 2}, 0);
  REQUIRE(sized.size() == 3);
  CHECK(sized[1].sizes() == Shape{0, 4});
  check_values(sized[2], {4, 5, 6, 7, 8, 9, 10, 11});
  std::vector<Tensor> chunks = a.chunk(3, 1);  // ceil(4 / 3) = 2: sizes 2, 2
  REQUIRE(chunks.size() == 2);
  check_values(chunks[1], {2, 3, 6, 7, 10, 11});
  for (const Tensor& v : rows) CHECK(v.is_alias_of(a));
  for (const Tensor& v : chunks) CHECK(v.is_alias_of(a));
}

TEST_CASE("views are tracked by autograd: one base, how each was made", "[views][autograd]") {
  Tensor a = iota({2, 3}).clone();
  Tensor v = a.t().narrow(0, 1, 2).unsqueeze(0);
  REQUIRE(v.is_view());
  REQUIRE(v._base().is_same(a));  // a view of a view of a view: still a's
  REQUIRE(a.view({6}).is_view());
  REQUIRE(a.as_strided({2}, {1}).is_view());
  REQUIRE(a.select(0, 0).is_view());
  REQUIRE(a.unbind()[0]._base().is_same(a));
  REQUIRE(a.split(1)[1]._base().is_same(a));
  REQUIRE_FALSE(a.detach().is_view());        // detach is not a view autograd tracks
  REQUIRE_FALSE(a.reshape({3, 2}).t().clone().is_view());
  REQUIRE_FALSE(a.is_view());
  Tensor x = leaf({2, 3}, 31);
  REQUIRE(x.select(1, 2).grad_fn()->name() == "SelectBackward0");
  REQUIRE(x.unbind()[1].grad_fn()->name() == "UnbindBackward0");
  REQUIRE(x.unbind()[1].output_nr() == 1);
  REQUIRE(x.split(1)[0].grad_fn()->name() == "SplitBackward0");
  REQUIRE(x.as_strided({2}, {3}).grad_fn()->name() == "AsStridedBackward0");
  REQUIRE(x.narrow(1, 0, 1).grad_fn()->name() == "SliceBackward0");
}

TEST_CASE("gradcheck: as_strided, select, narrow, view_as, unbind, split, chunk", "[views][gradcheck]") {
  Tensor c = leaf({3, 4}, 41);
  Tensor t = transposed_leaf({3, 4}, 42), s = stepped_leaf({3, 4}, 43);
  std::vector<std::pair<const char*, Fn>> fns = {
      {"as_strided", [](auto& x) { return x[0].as_strided({2, 2}, {1, 2}, 1); }},
      {"as_strided expanded", [](auto& x) { return x[0].as_strided({2, 3}, {0, 1}); }},
      {"as_strided of a view", [](auto& x) { return x[0].narrow(0, 1, 2).as_strided({2}, {1}); }},
      {"select", [](auto& x) { return x[0].select(1, 2); }},
      {"select neg", [](auto& x) { return x[0].select(-2, -1); }},
      {"narrow", [](auto& x) { return x[0].narrow(1, 1, 2); }},
      {"view_as", [](auto& x) { return x[0].view_as(zeros({12})); }},
      {"unbind", [](auto& x) { auto p = x[0].unbind(1); return mul(p[0], p[3]) + p[1]; }},
      {"unbind one used", [](auto& x) { return x[0].unbind(0)[1]; }},
      {"split", [](auto& x) { auto p = x[0].split(2, 1); return mul(p[0], p[1]); }},
      {"split_with_sizes", [](auto& x) { return split_with_sizes(x[0], {2, 1}, 0)[1] * 3.0; }},
      {"chunk", [](auto& x) { auto p = x[0].chunk(2, 0); return p[0].sum() + p[1].sum() * 2.0; }},
  };
  for (auto& [name, fn] : fns) {
    INFO(name);
    REQUIRE(gradcheck1(fn, {c}));
    // as_strided reads the storage, so its result depends on the input's layout, which
    // gradcheck's perturbed copies do not keep; view_as of a strided tensor needs a copy.
    const std::string n = name;
    if (n.rfind("as_strided", 0) == 0 || n == "view_as") continue;
    REQUIRE(gradcheck1(fn, {t}));
    REQUIRE(gradcheck1(fn, {s}));
  }
  REQUIRE(gradgradcheck1([](auto& x) { return mul(x[0].as_strided({2, 3}, {0, 1}, 2), x[0].select(0, 1).narrow(0, 0, 3)); },
                         {leaf({3, 4}, 44)}));
  REQUIRE(gradgradcheck1([](auto& x) { auto p = x[0].unbind(); return mul(p[0], p[1]); }, {leaf({2, 3}, 45)}));
}

TEST_CASE("detach stops gradients", "[views][autograd]") {
  Tensor x = leaf({3}, 21);
  Tensor y = add(mul(x, x.detach()), x);
  y.sum().backward();
  check_close(x.grad(), add(x.detach(), 1.0));
}

// ---------------------------------------------------------------------------------------------
// Meta, errors
// ---------------------------------------------------------------------------------------------

TEST_CASE("Meta: views keep geometry and allocate nothing", "[views][meta]") {
  Tensor a = meta({2, 3, 4}, kBFloat16);
  int64_t before = memory_allocated(Device{kCPU});
  CHECK(a.view({6, 4}).sizes() == Shape{6, 4});
  CHECK(a.view({6, 4}).dtype() == kBFloat16);
  CHECK(a.view({6, 4}).is_meta());
  CHECK(a.reshape({4, -1}).sizes() == Shape{4, 6});
  CHECK(a.transpose(0, 2).reshape({-1}).sizes() == Shape{24});  // a copying reshape on Meta
  CHECK(a.transpose(0, 2).strides() == Shape{1, 4, 12});
  CHECK(a.permute({1, 2, 0}).sizes() == Shape{3, 4, 2});
  CHECK(a.slice(2, 0, 4, 3).sizes() == Shape{2, 3, 2});
  CHECK(a.unsqueeze(1).sizes() == Shape{2, 1, 3, 4});
  CHECK(a.slice(0, 0, 1).squeeze(0).sizes() == Shape{3, 4});
  CHECK(a.expand({5, 2, 3, 4}).sizes() == Shape{5, 2, 3, 4});
  CHECK(a.detach().is_meta());
  CHECK(a.transpose(0, 1).contiguous().is_contiguous());
  int64_t v0 = a._version();
  a.view({24}).fill_(1.0);
  CHECK(a._version() == v0 + 1);
  CHECK(memory_allocated(Device{kCPU}) == before);
}

TEST_CASE("view error paths", "[views][errors]") {
  Tensor a = iota({2, 3, 4});
  REQUIRE_THROWS_WITH(a.transpose(0, 1).view({6, 4}),
                      Contains("aten::view") && Contains("view size is not compatible with input tensor's size and stride") &&
                          Contains("[3, 2, 4]"));
  REQUIRE_THROWS_WITH(meta({2, 3}).t().view({6}), Contains("view size is not compatible"));
  REQUIRE_THROWS_WITH(a.view({5, 5}), Contains("aten::view") && Contains("shape '[5, 5]' is invalid for input of size 24"));
  REQUIRE_THROWS_WITH(a.view({-1, -1}), Contains("aten::view") && Contains("only one dimension can be inferred"));
  REQUIRE_THROWS_WITH(a.view({-2, 12}), Contains("aten::view") && Contains("invalid shape dimension -2"));
  REQUIRE_THROWS_WITH(a.view({5, -1}), Contains("invalid for input of size 24"));
  REQUIRE_THROWS_WITH(zeros({0, 3}).view({-1, 0}), Contains("invalid for input of size 0"));
  REQUIRE_THROWS_WITH(a.transpose(0, 3), Contains("aten::transpose") && Contains("Dimension out of range") && Contains("got 3"));
  REQUIRE_THROWS_WITH(a.permute({0, 1}), Contains("aten::permute") && Contains("number of dims don't match"));
  REQUIRE_THROWS_WITH(a.permute({0, 1, 1}), Contains("aten::permute") && Contains("repeated dim"));
  REQUIRE_THROWS_WITH(a.permute({0, 1, 3}), Contains("aten::permute") && Contains("Dimension out of range"));
  REQUIRE_THROWS_WITH(a.slice(3, 0, 1), Contains("aten::slice") && Contains("Dimension out of range"));
  REQUIRE_THROWS_WITH(a.slice(0, 0, 1, 0), Contains("aten::slice") && Contains("step must be positive"));
  REQUIRE_THROWS_WITH(a.slice(0, 0, 1, -1), Contains("step must be positive"));
  REQUIRE_THROWS_WITH(scalar_tensor(1.0).slice(0, 0, 1), Contains("aten::slice") && Contains("0-dim"));
  REQUIRE_THROWS_WITH(a.unsqueeze(4), Contains("aten::unsqueeze") && Contains("Dimension out of range") && Contains("[-4, 3]"));
  REQUIRE_THROWS_WITH(a.unsqueeze(-5), Contains("aten::unsqueeze") && Contains("Dimension out of range"));
  REQUIRE_THROWS_WITH(a.squeeze(3), Contains("aten::squeeze") && Contains("Dimension out of range"));
  REQUIRE_THROWS_WITH(a.expand({2, 5, 4}),
                      Contains("aten::expand") && Contains("expanded size of the tensor (5) must match the existing size (3)") &&
                          Contains("[2, 5, 4]"));
  REQUIRE_THROWS_WITH(a.expand({3, 4}), Contains("aten::expand") && Contains("number of sizes provided (2)") &&
                                            Contains("number of dimensions in the tensor (3)"));
  REQUIRE_THROWS_WITH(a.expand({-1, 2, 3, 4}), Contains("aten::expand") && Contains("leading, non-existing dimension"));
  REQUIRE_THROWS_WITH(tensor({1}, {1}).expand({-2}), Contains("aten::expand") && Contains("-2"));
  REQUIRE_THROWS_WITH(meta({2, 1}).expand({2, -3}), Contains("aten::expand") && Contains("-3"));
}

TEST_CASE("as_strided, select, narrow, unbind, split, chunk error paths", "[views][errors]") {
  Tensor a = iota({3, 4});
  REQUIRE_THROWS_WITH(a.as_strided({2, 2}, {1}), Contains("aten::as_strided: mismatch in length of strides and shape"));
  REQUIRE_THROWS_WITH(a.as_strided({4, 4}, {4, 1}),
                      "aten::as_strided: setStorage: sizes [4, 4], strides [4, 1], storage offset 0, and itemsize 4 "
                      "requiring a storage size of 64 are out of bounds for storage of size 48");
  REQUIRE_THROWS_WITH(meta({2}).as_strided({2}, {1}, 1), Contains("out of bounds for storage of size 8"));
  REQUIRE_THROWS_WITH(a.as_strided({2}, {1}, -1), Contains("invalid storage offset -1"));
  REQUIRE_THROWS_WITH(a.as_strided({-1}, {1}), Contains("negative dimension -1"));
  REQUIRE_THROWS_WITH(a.as_strided({2}, {-1}), Contains("Negative strides are not supported"));
  REQUIRE_NOTHROW(a.as_strided({0}, {1}, 100));  // an empty view reads nothing
  REQUIRE_THROWS_WITH(a.select(0, 3), "aten::select: select(): index 3 out of range for tensor of size [3, 4] at dimension 0");
  REQUIRE_THROWS_WITH(a.select(1, -5), Contains("index -5 out of range"));
  REQUIRE_THROWS_WITH(a.select(2, 0), Contains("aten::select") && Contains("Dimension out of range"));
  REQUIRE_THROWS_WITH(scalar_tensor(1.0).select(0, 0), Contains("select() cannot be applied to a 0-dim tensor"));
  REQUIRE_THROWS_WITH(a.narrow(1, 2, 3), "aten::narrow: start (2) + length (3) exceeds dimension size (4).");
  REQUIRE_THROWS_WITH(scalar_tensor(1.0).narrow(0, 0, 1), Contains("narrow() cannot be applied to a 0-dim tensor"));
  REQUIRE_THROWS_WITH(scalar_tensor(1.0).unbind(), Contains("aten::unbind") && Contains("tensor has no dimensions"));
  REQUIRE_THROWS_WITH(split_with_sizes(a, {1, 1}, 0),
                      "aten::split_with_sizes: split_with_sizes expects split_sizes to sum exactly to 3 (input "
                      "tensor's size at dimension 0), but got split_sizes=[1, 1]");
  REQUIRE_THROWS_WITH(split_with_sizes(a, {4, -1}, 0), Contains("only non-negative entries"));
  REQUIRE_THROWS_WITH(a.split(0), Contains("split_size can only be 0 if dimension size is 0") && Contains("3"));
  REQUIRE_THROWS_WITH(a.chunk(0), Contains("chunk expects `chunks` to be greater than 0, got: 0"));
  REQUIRE_THROWS_WITH(scalar_tensor(1.0).split(1), Contains("split expects at least a 1-dimensional tensor"));
}

TEST_CASE("unbind: views of each index, gradients stacked into one buffer", "[views][autograd]") {
  Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  std::vector<Tensor> cols = unbind(x, 1);
  REQUIRE(cols.size() == 3);
  check_values(cols[1], {2, 5});
  CHECK(cols[2].strides() == Shape{3});
  CHECK(cols[0].impl()->is_view());
  std::vector<Tensor> rows = unbind(x, -2);
  check_values(rows[1], {4, 5, 6});
  x.add_(ones({2, 3}));  // shared storage and version counter
  check_values(rows[0], {2, 3, 4});
  CHECK(rows[0]._version() == x._version());

  // Unused outputs get zeros; the input's gradient is one contiguous buffer.
  Tensor leaf_x = leaf({2, 3, 4}, 71);
  std::vector<Tensor> parts = unbind(leaf_x, 1);
  (parts[0] * 2.0 + parts[2]).sum().backward();
  std::vector<double> want;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) want.push_back(j == 0 ? 2.0 : j == 2 ? 1.0 : 0.0);
  check_values(leaf_x.grad(), want);
  CHECK(leaf_x.grad().is_contiguous());
  REQUIRE(gradcheck1([](auto& in) { return unbind(in[0], 0)[1] * unbind(in[0], 0)[0]; }, {leaf({2, 3}, 72)}));
  REQUIRE(gradcheck1([](auto& in) { return unbind(in[0].transpose(0, 1), 2)[1]; }, {leaf({3, 2, 2}, 73)}));

  std::vector<Tensor> m = unbind(meta({2, 5, 3}), 1);
  REQUIRE(m.size() == 5);
  CHECK(m[4].sizes() == Shape{2, 3});
  CHECK(m[4].is_meta());
  REQUIRE_THROWS_WITH(unbind(scalar_tensor(1.0), 0), Contains("aten::unbind") && Contains("no dimensions"));
  REQUIRE_THROWS_WITH(unbind(zeros({2, 3}), 2), Contains("aten::unbind") && Contains("Dimension out of range"));
}
