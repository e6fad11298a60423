// Tests ops/copy.cpp: clone, _to_copy, copy_, fill_, zero_, zeros_like, ones_like, cat, triu,
// slice_backward (values, strided operands, version counter, gradients, bf16, Meta, errors)
// and their derivative rules.
#include <omp.h>

#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {
Tensor iota(const Shape& shape, ScalarType dt = kFloat) {
  return arange(shape_numel(shape), TensorOptions().dtype(dt)).view(shape);
}
}  // namespace

TEST_CASE("clone: a contiguous copy with its own storage", "[copy]") {
  Tensor a = iota({2, 3});
  Tensor t = a.t();
  Tensor c = t.clone();
  CHECK_FALSE(c.is_alias_of(a));
  CHECK(c.is_contiguous());
  CHECK(c.sizes() == Shape{3, 2});
  check_values(c, {0, 3, 1, 4, 2, 5});
  a.fill_(9.0);
  check_values(c, {0, 3, 1, 4, 2, 5});
  CHECK(clone(tensor({1, 2}, {2}, kLong)).dtype() == kLong);
  CHECK(clone(tensor({1, 0}, {2}, kBool)).to_vector() == std::vector<double>{1, 0});
  Tensor e = tensor({1, 2}, {2, 1}).expand({2, 3}).clone();
  CHECK(e.strides() == Shape{3, 1});
  check_values(e, {1, 1, 1, 2, 2, 2});
}

TEST_CASE("_to_copy and Tensor::to: dtype conversions", "[copy]") {
  Tensor a = tensor({1.5, -2.25, 3}, {3});
  Tensor d = a.to(kDouble);
  CHECK(d.dtype() == kDouble);
  check_values(d, {1.5, -2.25, 3});
  CHECK(a.to(kFloat).is_same(a));  // no-op conversion returns self
  Tensor l = a.to(kLong);
  CHECK(l.dtype() == kLong);
  check_values(l, {1, -2, 3});  // truncation toward zero
  Tensor b = tensor({0, 2, -1}, {3}).to(kBool);
  check_values(b, {0, 1, 1});
  check_values(b.to(kFloat), {0, 1, 1});
  // bf16 rounds to 8 significant bits: 1 + 2^-9 rounds to 1, 1 + 2^-7 is exact
  check_values(tensor({1 + 1.0 / 512, 1 + 1.0 / 128, 3.140625}, {3}).to(kBFloat16), {1, 1 + 1.0 / 128, 3.140625}, 0);
  check_values(tensor({1 + 1.0 / 2048, 65504}, {2}).to(kHalf), {1, 65504}, 0);
  // strided source
  check_values(iota({2, 3}).t().to(kDouble), {0, 3, 1, 4, 2, 5});
  Tensor c = _to_copy(a, std::nullopt, std::nullopt);
  CHECK_FALSE(c.is_alias_of(a));
  check_values(c, {1.5, -2.25, 3});
  // to another device: Meta keeps shape and dtype
  Tensor m = _to_copy(a, kBFloat16, Device{kMeta});
  CHECK(m.is_meta());
  CHECK(m.dtype() == kBFloat16);
  CHECK(m.sizes() == Shape{3});
  CHECK(a.to(Device{kCPU}).is_same(a));
}

TEST_CASE("copy_: broadcasting, dtype conversion, strided destination and source", "[copy]") {
  Tensor dst = zeros({2, 3});
  int64_t v0 = dst._version();
  Tensor& r = dst.copy_(tensor({1, 2, 3}, {3}, kDouble));
  CHECK(r.is_same(dst));
  CHECK(dst._version() == v0 + 1);
  CHECK(dst.dtype() == kFloat);
  check_values(dst, {1, 2, 3, 1, 2, 3});
  dst.copy_(iota({3, 2}).t());
  check_values(dst, {0, 2, 4, 1, 3, 5});
  // into a strided view: writes through to the base
  Tensor base = zeros({3, 4});
  base.slice(1, 1, 4, 2).copy_(tensor({7, 8}, {2}));
  check_values(base, {0, 7, 0, 8, 0, 7, 0, 8, 0, 7, 0, 8});
  base.t().copy_(iota({4, 3}));
  check_values(base, {0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11});
  Tensor l = zeros({2}, kLong);
  l.copy_(tensor({2.7, -1.5}, {2}));
  check_values(l, {2, -1});
}

TEST_CASE("fill_, zero_, zeros_like, ones_like", "[copy]") {
  Tensor a = iota({2, 3});
  int64_t v0 = a._version();
  a.fill_(2.5);
  check_values(a, std::vector<double>(6, 2.5));
  CHECK(a._version() == v0 + 1);
  a.zero_();
  check_values(a, std::vector<double>(6, 0.0));
  CHECK(a._version() == v0 + 2);
  Tensor b = iota({2, 4});
  b.slice(1, 0, 4, 2).fill_(-1.0);
  check_values(b, {-1, 1, -1, 3, -1, 5, -1, 7});
  b.t().slice(0, 1, 2).zero_();
  check_values(b, {-1, 0, -1, 3, -1, 0, -1, 7});
  Tensor l = zeros({2}, kLong);
  l.fill_(3.0);
  check_values(l, {3, 3});
  Tensor src = iota({2, 3}, kDouble).t();
  Tensor z = zeros_like(src), o = ones_like(src);
  CHECK(z.sizes() == Shape{3, 2});
  CHECK(z.dtype() == kDouble);
  check_values(z, std::vector<double>(6, 0.0));
  check_values(o, std::vector<double>(6, 1.0));
  CHECK_FALSE(z.is_alias_of(src));
  CHECK(empty_like(src).sizes() == Shape{3, 2});
  Tensor g = leaf({2}, 1);
  CHECK_FALSE(zeros_like(g).requires_grad());
  CHECK_FALSE(ones_like(g).requires_grad());
}

TEST_CASE("cat: dims, negative dim, promotion, strided inputs", "[copy]") {
  Tensor a = iota({2, 2}), b = tensor({10, 11}, {1, 2});
  Tensor c0 = cat({a, b});
  CHECK(c0.sizes() == Shape{3, 2});
  check_values(c0, {0, 1, 2, 3, 10, 11});
  Tensor c1 = cat({a, b.t(), a}, 1);
  CHECK(c1.sizes() == Shape{2, 5});
  check_values(c1, {0, 1, 10, 0, 1, 2, 3, 11, 2, 3});
  check_values(cat({a, b.t()}, -1), {0, 1, 10, 2, 3, 11});
  check_values(cat({a.t(), a.slice(0, 0, 1)}, 0), {0, 2, 1, 3, 0, 1});
  Tensor single = cat({a});
  CHECK_FALSE(single.is_alias_of(a));
  check_values(single, {0, 1, 2, 3});
  Tensor mixed = cat({tensor({1}, {1}, kLong), tensor({0.5}, {1}, kDouble)});
  CHECK(mixed.dtype() == kDouble);
  check_values(mixed, {1, 0.5});
  // empty parts along the cat dim
  check_values(cat({zeros({0, 2}), b}), {10, 11});
  Tensor x3 = iota({2, 3, 4});
  Tensor c3 = cat({x3, x3.slice(1, 0, 1)}, 1);
  CHECK(c3.sizes() == Shape{2, 4, 4});
  check_values(c3.slice(1, 3, 4), {0, 1, 2, 3, 12, 13, 14, 15});
}

TEST_CASE("cat of contiguous inputs (row by row of out) equals the slices it is made of, any dim and thread count",
          "[copy]") {
  // split's backward at a size the threads share (rows over 32768 elements), in f32, bf16 and int64
  for (ScalarType dt : {kFloat, kBFloat16, kLong}) {
    for (int64_t dim : {0, 1, 2}) {
      INFO(toString(dt) << ", dim " << dim);
      Shape part = {4, 96, 128};
      std::vector<Tensor> parts;
      for (int64_t k = 0; k < 3; ++k) {
        Shape sz = part;
        sz[dim] += k;  // unequal parts
        parts.push_back(add(iota(sz, kFloat), double(1000 * k)).to(dt));
      }
      parts.push_back(zeros([&] { Shape z = part; z[dim] = 0; return z; }(), TensorOptions().dtype(dt)));  // empty
      for (int threads : {1, 2}) {
        const int before = omp_get_max_threads();
        omp_set_num_threads(threads);
        Tensor c = cat(parts, dim);
        omp_set_num_threads(before);
        int64_t at = 0;
        for (const Tensor& p : parts) {
          const int64_t len = p.sizes()[dim];
          CHECK(equal(c.slice(dim, at, at + len), p));
          at += len;
        }
        CHECK(at == c.sizes()[dim]);
      }
    }
  }
}

TEST_CASE("triu: diagonal offsets, batches, strided input", "[copy]") {
  Tensor a = add(iota({3, 3}), 1.0);  // 1..9
  check_values(triu(a), {1, 2, 3, 0, 5, 6, 0, 0, 9});
  check_values(triu(a, 1), {0, 2, 3, 0, 0, 6, 0, 0, 0});
  check_values(triu(a, -1), {1, 2, 3, 4, 5, 6, 0, 8, 9});
  check_values(triu(a, 5), std::vector<double>(9, 0.0));
  check_values(triu(a, -5), a.to_vector());
  check_values(triu(add(iota({2, 3}), 1.0)), {1, 2, 3, 0, 5, 6});
  check_values(triu(add(iota({3, 2}), 1.0)), {1, 2, 0, 4, 0, 0});
  check_values(triu(a.t()), {1, 4, 7, 0, 5, 8, 0, 0, 9});
  Tensor batch = add(iota({2, 2, 2}), 1.0);
  check_values(triu(batch), {1, 2, 0, 4, 5, 6, 0, 8});
  check_values(triu(tensor({1, 1, 1, 1}, {2, 2}, kBool)), {1, 1, 0, 1});
  CHECK(triu(tensor({1, 2, 3, 4}, {2, 2}, kLong)).dtype() == kLong);
}

TEST_CASE("slice_backward: scatters the gradient into zeros", "[copy]") {
  Tensor g = tensor({1, 2}, {2});
  check_values(slice_backward(g, {6}, 0, 1, 5, 3), {0, 1, 0, 0, 2, 0});
  check_values(slice_backward(g, {6}, 0, -2, 6, 1), {0, 0, 0, 0, 1, 2});
  Tensor g2 = tensor({1, 2, 3, 4}, {2, 2});
  check_values(slice_backward(g2, {2, 3}, -1, 1, 3, 1), {0, 1, 2, 0, 3, 4});
  check_values(slice_backward(g2.t(), {2, 4}, 1, 0, 4, 2), {1, 0, 3, 0, 2, 0, 4, 0});
}

// ---------------------------------------------------------------------------------------------
// gradients
// ---------------------------------------------------------------------------------------------

TEST_CASE("gradcheck: clone, contiguous, _to_copy, cat, triu, slice_backward", "[copy][gradcheck]") {
  Tensor t = transposed_leaf({3, 4}, 11), s = stepped_leaf({3, 4}, 12);
  for (const Tensor& x : {t, s}) {
    REQUIRE(gradcheck1([](auto& x) { return x[0].clone(); }, {x}));
    REQUIRE(gradcheck1([](auto& x) { return x[0].contiguous(); }, {x}));
    REQUIRE(gradcheck1([](auto& x) { return _to_copy(x[0], std::nullopt, std::nullopt); }, {x}));
    REQUIRE(gradcheck1([](auto& x) { return triu(x[0]); }, {x}));
    REQUIRE(gradcheck1([](auto& x) { return triu(x[0], -1); }, {x}));
    REQUIRE(gradcheck1([](auto& x) { return triu(x[0], 2); }, {x}));
  }
  REQUIRE(gradcheck1([](auto& x) { return triu(x[0], 1); }, {leaf({2, 3, 3}, 13)}));
  // a float32 round trip keeps the f64 leaf's gradient f64 (values within float precision)
  Tensor d = leaf({3}, 14);
  mul(d.to(kFloat), 2.0f).sum().backward();
  CHECK(d.grad().dtype() == kDouble);
  check_values(d.grad(), {2, 2, 2});
  Tensor a = leaf({2, 3}, 15), b = leaf({1, 3}, 16), c = transposed_leaf({2, 2}, 17);
  REQUIRE(gradcheck1([](auto& x) { return cat({x[0], x[1]}); }, {a, b}));
  REQUIRE(gradcheck1([](auto& x) { return cat({x[0], x[1], x[0]}, -2); }, {a, b}));
  REQUIRE(gradcheck1([](auto& x) { return cat({x[0], x[1]}, 1); }, {a, c}));
  REQUIRE(gradcheck1([](auto& x) { return cat({x[0].expand({2, 3}), x[1]}, 0); }, {b, a}));
  // one part not requiring grad
  Tensor fixed = randn_seeded({2, 3}, 18);
  REQUIRE(gradcheck1([fixed](auto& x) { return cat({fixed, x[0]}); }, {b}));
  REQUIRE(gradcheck1([](auto& x) { return slice_backward(x[0], {6, 2}, 0, 1, 6, 2); }, {leaf({3, 2}, 19)}));
  REQUIRE(gradgradcheck1([](auto& x) { return mul(cat({x[0], x[0]}), cat({x[0], x[0]})); }, {leaf({2}, 20)}));
}

TEST_CASE("copy_, zero_, fill_ on non-leaf tensors: history rebased, gradients right", "[copy][inplace][autograd]") {
  SECTION("copy_ from a tensor requiring grad") {
    Tensor x = leaf({2, 3}, 21), src = leaf({3}, 22);
    Tensor h = mul(x, 2.0);
    h.copy_(src);
    mul(h, h).sum().backward();
    // h = broadcast(src): x gets nothing, src gets 2 * 2 src (two rows)
    check_values(x.grad(), std::vector<double>(6, 0.0));
    check_close(src.grad(), mul(src.detach(), 4.0));
  }
  SECTION("copy_ converting dtype: the source's gradient keeps its dtype") {
    Tensor src = from_vector({1, 2}, {2}, TensorOptions().dtype(kFloat).requires_grad(true));
    Tensor h = zeros({2}, kDouble);
    h.copy_(src);
    CHECK(h.requires_grad());
    mul(h, 3.0).sum().backward();
    CHECK(src.grad().dtype() == kFloat);
    check_values(src.grad(), {3, 3});
  }
  SECTION("gradcheck through copy_, zero_, fill_") {
    REQUIRE(gradcheck1([](auto& x) { Tensor h = mul(x[0], 1.0); h.copy_(x[1]); return mul(h, x[0]); },
                       {leaf({2, 3}, 23), transposed_leaf({2, 3}, 24)}));
    REQUIRE(gradcheck1([](auto& x) { Tensor h = sin(x[0]); h.zero_(); return add(h, x[0]); }, {leaf({4}, 25)}));
    REQUIRE(gradcheck1([](auto& x) { Tensor h = sin(x[0]); h.fill_(2.0); return mul(h, x[0]); }, {leaf({4}, 26)}));
  }
  SECTION("the version counter and the leaf check") {
    Tensor w = leaf({3}, 27);
    REQUIRE_THROWS_WITH(w.copy_(zeros({3}, kDouble)), Contains("a leaf Variable that requires grad is being used in an in-place operation"));
    REQUIRE_THROWS_WITH(w.zero_(), Contains("a leaf Variable that requires grad"));
    REQUIRE_THROWS_WITH(w.fill_(1.0), Contains("a leaf Variable that requires grad"));
    REQUIRE_THROWS_WITH(w.slice(0, 0, 2).zero_(), Contains("a view of a leaf Variable that requires grad"));
    Tensor hw = mul(w, 1.0);
    hw.slice(0, 0, 2).zero_();  // through a view of a non-leaf: CopySlices
    REQUIRE(hw.grad_fn()->name() == "CopySlices");
    hw.sum().backward();
    check_values(w.grad(), {0, 0, 1});
    Tensor h = mul(w, 1.0);
    Tensor y = sin(h);  // saves h
    int64_t v0 = h._version();
    h.fill_(0.0);
    CHECK(h._version() == v0 + 1);
    REQUIRE_THROWS_WITH(y.sum().backward(), Contains("modified by an inplace operation"));
  }
}

// ---------------------------------------------------------------------------------------------
// bf16, Meta, errors
// ---------------------------------------------------------------------------------------------

TEST_CASE("bf16: copies keep bf16 storage and values", "[copy][bf16]") {
  Tensor a = randn_seeded({4, 5}, 31, kFloat);
  check_bf16_matches_f32([](auto& x) { return x[0].clone(); }, {a}, 0, 0);
  check_bf16_matches_f32([](auto& x) { return x[0].t().contiguous(); }, {a}, 0, 0);
  check_bf16_matches_f32([](auto& x) { return cat({x[0], x[0].slice(0, 1, 3)}); }, {a}, 0, 0);
  check_bf16_matches_f32([](auto& x) { return triu(x[0], 1); }, {a}, 0, 0);
  check_bf16_matches_f32([](auto& x) { return zeros_like(x[0]); }, {a}, 0, 0);
  Tensor b = a.to(kBFloat16);
  CHECK(b.nbytes() == 40);
  Tensor back = b.to(kFloat);
  std::vector<double> x = a.to_vector(), y = back.to_vector();
  for (size_t i = 0; i < x.size(); ++i) CHECK(std::abs(x[i] - y[i]) <= std::abs(x[i]) / 256);
}

TEST_CASE("Meta: copies infer shapes and dtypes and allocate nothing", "[copy][meta]") {
  Tensor a = meta({2, 3});
  int64_t before = memory_allocated(Device{kCPU});
  CHECK(a.clone().is_meta());
  CHECK(a.clone().sizes() == Shape{2, 3});
  CHECK(a.to(kBFloat16).dtype() == kBFloat16);
  CHECK(a.to(kBFloat16).is_meta());
  CHECK(zeros_like(a).is_meta());
  CHECK(ones_like(meta({4}, kLong)).dtype() == kLong);
  CHECK(cat({a, meta({1, 3})}).sizes() == Shape{3, 3});
  CHECK(cat({a, meta({2, 5}, kDouble)}, -1).dtype() == kDouble);
  CHECK(triu(a).sizes() == Shape{2, 3});
  CHECK(slice_backward(meta({2, 2}), {2, 4}, 1, 0, 4, 2).sizes() == Shape{2, 4});
  int64_t v0 = a._version();
  a.copy_(meta({3}));
  a.fill_(1.0);
  a.zero_();
  CHECK(a._version() == v0 + 3);
  // copying a CPU tensor into a Meta tensor checks shapes only
  Tensor cpu = zeros({3});
  int64_t with_cpu = memory_allocated(Device{kCPU});
  a.copy_(cpu);
  CHECK(memory_allocated(Device{kCPU}) == with_cpu);
  cpu.reset();
  Tensor w = meta({2, 3}).requires_grad_();
  cat({w, w}).sum().backward();
  CHECK(w.grad().is_meta());
  CHECK(memory_allocated(Device{kCPU}) == before);
}

TEST_CASE("copy error paths", "[copy][errors]") {
  REQUIRE_THROWS_WITH(zeros({2, 3}).copy_(zeros({4})), Contains("aten::copy_") && Contains("[2, 3]") && Contains("[4]"));
  REQUIRE_THROWS_WITH(zeros({3}).copy_(zeros({2, 3})),
                      Contains("aten::copy_") && Contains("[2, 3]") && Contains("cannot be broadcast") && Contains("[3]"));
  REQUIRE_THROWS_WITH(meta({3}).copy_(meta({2, 3})), Contains("aten::copy_"));
  REQUIRE_THROWS_WITH(zeros({1, 3}).expand({2, 3}).copy_(ones({2, 3})),
                      Contains("aten::copy_") && Contains("more than one element of the written-to tensor"));
  // fill_ and zero_ are idempotent: an expanded destination is fine (as in PyTorch)
  Tensor row = zeros({1, 3});
  Tensor e = row.expand({2, 3});
  e.fill_(4.0);
  check_values(row, {4, 4, 4});
  e.zero_();
  check_values(row, {0, 0, 0});
  // Meta tensors have no data to copy out
  REQUIRE_THROWS_WITH(zeros({3}).copy_(meta({3})), Contains("aten::copy_") && Contains("Cannot copy out of meta tensor"));
  REQUIRE_THROWS_WITH(meta({3}).to(Device{kCPU}), Contains("aten::_to_copy") && Contains("Cannot copy out of meta tensor"));
  REQUIRE_THROWS_WITH(meta({3}).to_vector(), Contains("meta"));
  REQUIRE_THROWS_WITH(cat({}), Contains("aten::cat") && Contains("non-empty list"));
  REQUIRE_THROWS_WITH(cat({scalar_tensor(1.0), scalar_tensor(2.0)}), Contains("aten::cat") && Contains("zero-dimensional"));
  REQUIRE_THROWS_WITH(cat({zeros({2, 3}), zeros({2, 4})}),
                      Contains("aten::cat") && Contains("Sizes of tensors must match except in dimension 0") &&
                          Contains("Expected size 3 but got size 4 for tensor number 1"));
  REQUIRE_THROWS_WITH(cat({zeros({2, 3}), zeros({3})}),
                      Contains("aten::cat") && Contains("Tensors must have same number of dimensions: got 2 and 1"));
  REQUIRE_THROWS_WITH(cat({zeros({2, 3}), zeros({2, 3})}, 2), Contains("aten::cat") && Contains("Dimension out of range"));
  REQUIRE_THROWS_WITH(cat({zeros({2, 3}), meta({2, 3})}),
                      Contains("aten::cat") && Contains("Expected all tensors to be on the same device"));
  REQUIRE_THROWS_WITH(cat({meta({2, 3}), zeros({2, 3})}), Contains("Expected all tensors to be on the same device"));
  REQUIRE_THROWS_WITH(triu(zeros({3})), Contains("aten::triu") && Contains("at least 2 dimensions") && Contains("[3]"));
  REQUIRE_THROWS_WITH(triu(meta({3})), Contains("aten::triu") && Contains("at least 2 dimensions"));
}
