// Mirrors test/test_torch.py and test/test_view_ops.py (metadata, views).
// Tests engine/core/tensor.cpp (Tensor handle metadata, views, make_empty/make_alias, dims).
#include <catch2/catch.hpp>

#include <sstream>

#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::testing::values;

TEST_CASE("An undefined Tensor", "[tensor]") {
  Tensor t;
  REQUIRE_FALSE(t.defined());
  REQUIRE(t.toString() == "UndefinedType");
  std::ostringstream os;
  os << t;
  REQUIRE(os.str() == "[ Tensor (undefined) ]");
}

TEST_CASE("Tensor metadata of a fresh tensor", "[tensor]") {
  Tensor t = zeros({2, 3}, kDouble);
  REQUIRE(t.defined());
  REQUIRE(t.dim() == 2);
  REQUIRE(t.sizes() == Shape{2, 3});
  REQUIRE(t.strides() == Shape{3, 1});
  REQUIRE(t.numel() == 6);
  REQUIRE(t.dtype() == kDouble);
  REQUIRE(t.scalar_type() == kDouble);
  REQUIRE(t.itemsize() == 8);
  REQUIRE(t.nbytes() == 48);
  REQUIRE(t.device() == Device{kCPU});
  REQUIRE(t.is_contiguous());
  REQUIRE(t.storage_offset() == 0);
  REQUIRE(t._version() == 1);  // zeros() fills through aten::fill_, which bumps the version
  REQUIRE(t.toString() == "CPUDoubleType");
  REQUIRE(empty({2}, Device{kMeta}).toString() == "MetaFloatType");
  REQUIRE(make_empty({2}, kFloat, Device{kCPU})._version() == 0);
}

TEST_CASE("Tensor::size and stride wrap negative dims and name the bad one", "[tensor]") {
  Tensor t = zeros({2, 3, 4});
  REQUIRE(t.size(-1) == 4);
  REQUIRE(t.size(0) == 2);
  REQUIRE(t.stride(-3) == 12);
  REQUIRE_THROWS_WITH(t.size(3), "size: Dimension out of range (expected to be in range of [-3, 2], but got 3)");
  REQUIRE_THROWS_WITH(t.stride(-4), "stride: Dimension out of range (expected to be in range of [-3, 2], but got -4)");
  // A 0-dim tensor accepts dims -1 and 0 (as PyTorch's maybe_wrap_dim).
  REQUIRE(maybe_wrap_dim(-1, 0, "op") == 0);
  REQUIRE(maybe_wrap_dim(0, 0, "op") == 0);
  REQUIRE_THROWS_WITH(maybe_wrap_dim(1, 0, "aten::x"),
                      "aten::x: Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}

TEST_CASE("Tensor::data_ptr<T> checks the dtype", "[tensor]") {
  Tensor t = zeros({2});
  REQUIRE(t.data_ptr<float>() == t.data_ptr());
  REQUIRE_THROWS_WITH(t.data_ptr<double>(), "data_ptr: expected a Double tensor, got Float");
}

TEST_CASE("Views share storage and the version counter with their base", "[tensor]") {
  Tensor x = arange(6, kDouble).view({2, 3});
  Tensor t = x.transpose(0, 1);
  Tensor s = x.slice(1, 1, 3);
  Tensor v = x.view({3, 2});

  REQUIRE(t.sizes() == Shape{3, 2});
  REQUIRE(t.strides() == Shape{1, 3});
  REQUIRE_FALSE(t.is_contiguous());
  REQUIRE(s.sizes() == Shape{2, 2});
  REQUIRE(s.strides() == Shape{3, 1});
  REQUIRE(s.storage_offset() == 1);
  REQUIRE_FALSE(s.is_contiguous());
  REQUIRE(values(s) == std::vector<double>{1, 2, 4, 5});
  REQUIRE(values(t) == std::vector<double>{0, 3, 1, 4, 2, 5});
  for (const Tensor& view : {t, s, v}) {
    REQUIRE(view.is_alias_of(x));
    REQUIRE(view.impl()->is_view());
    REQUIRE_FALSE(view.is_same(x));
  }

  const int64_t before = x._version();
  s.mul_(10.0);  // writes through the view
  REQUIRE(x._version() == before + 1);
  REQUIRE(t._version() == before + 1);
  REQUIRE(values(x) == std::vector<double>{0, 10, 20, 3, 40, 50});
}

TEST_CASE("detach shares storage and version counter but is not a view", "[tensor]") {
  Tensor x = ones({3}, kDouble);
  Tensor d = x.detach();
  REQUIRE(d.is_alias_of(x));
  REQUIRE_FALSE(d.impl()->is_view());
  d.add_(1.0);
  REQUIRE(x._version() == d._version());
  REQUIRE(values(x) == std::vector<double>{2, 2, 2});
}

TEST_CASE("make_empty allocates contiguous storage; make_empty_strided sizes it by the strides", "[tensor]") {
  Tensor a = make_empty({2, 3}, kFloat, Device{kCPU});
  REQUIRE(a.strides() == Shape{3, 1});
  REQUIRE(a.impl()->storage()->nbytes() == 24);
  // Column-major 2x3: the last element is at 1*1 + 2*2 = 5, so 6 elements of storage.
  Tensor b = make_empty_strided({2, 3}, {1, 2}, kFloat, Device{kCPU});
  REQUIRE(b.impl()->storage()->nbytes() == 24);
  REQUIRE_FALSE(b.is_contiguous());
  // Expanded (stride 0) storage holds one row.
  Tensor c = make_empty_strided({4, 3}, {0, 1}, kDouble, Device{kCPU});
  REQUIRE(c.impl()->storage()->nbytes() == 24);
  Tensor z = make_empty({2, 0}, kFloat, Device{kCPU});
  REQUIRE(z.impl()->storage()->nbytes() == 0);
  REQUIRE(z.data_ptr() == nullptr);
  REQUIRE_THROWS_WITH(make_empty({2, -1}, kFloat, Device{kCPU}),
                      "empty: Trying to create tensor with negative dimension -1: [2, -1]");
}

TEST_CASE("make_alias builds a view with new geometry", "[tensor]") {
  Tensor x = arange(6, kDouble);
  Tensor a = make_alias(x, {2, 2}, {1, 2}, 1);
  REQUIRE(a.is_alias_of(x));
  REQUIRE(a.impl()->is_view());
  REQUIRE(a.storage_offset() == 1);
  REQUIRE(values(a) == std::vector<double>{1, 3, 2, 4});
}

TEST_CASE("Copying a Tensor handle shares the TensorImpl", "[tensor]") {
  Tensor a = zeros({2});
  REQUIRE(a.use_count() == 1);
  Tensor b = a;
  REQUIRE(a.use_count() == 2);
  REQUIRE(b.is_same(a));
  REQUIRE(b.unsafeGetTensorImpl() == a.unsafeGetTensorImpl());
  b.reset();
  REQUIRE_FALSE(b.defined());
  REQUIRE(a.use_count() == 1);
}

TEST_CASE("TensorOptions chain like PyTorch's", "[tensor]") {
  TensorOptions o = TensorOptions().dtype(kDouble).device(Device{kMeta}).requires_grad(true);
  REQUIRE(o.dtype() == kDouble);
  REQUIRE(o.device() == Device{kMeta});
  REQUIRE(o.requires_grad());
  TensorOptions d;
  REQUIRE(d.dtype() == kFloat);
  REQUIRE(d.device() == Device{kCPU});
  REQUIRE_FALSE(d.requires_grad());
  REQUIRE(TensorOptions(kMeta).device() == Device{kMeta});
  Tensor t = zeros({2}, o);
  REQUIRE(t.is_meta());
  REQUIRE(t.requires_grad());
}

TEST_CASE("Tensor and Shape print like PyTorch", "[tensor]") {
  std::ostringstream a, b, c, d;
  a << from_vector({1, 2.5, 3}, {3});
  REQUIRE(a.str() == "tensor([1, 2.5, 3], size=[3], dtype=Float)");
  b << zeros({2}, TensorOptions().dtype(kDouble).requires_grad(true));
  REQUIRE(b.str() == "tensor([0, 0], size=[2], dtype=Double, requires_grad=True)");
  c << empty({2, 3}, Device{kMeta});
  REQUIRE(c.str() == "tensor(size=[2, 3], dtype=Float, device=meta)");
  d << Shape{4, 5};
  REQUIRE(d.str() == "[4, 5]");
  REQUIRE(Device(kCUDA, 1).str() == "cuda:1");
  REQUIRE(Device(kMeta).str() == "meta");
}
