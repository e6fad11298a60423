// Tests ops/factory.cpp: empty, zeros, ones, full, arange, from_vector, scalar_tensor, rand,
// randn and the uniform_/normal_ ops (values, dtypes, requires_grad, devices, Philox
// reproducibility, distribution moments, Meta, errors).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "remat.h"
#include "tests/testing/op_counter.h"
#include "tests/testing/op_testing.h"

using namespace remat;
using namespace remat::testing;
using Catch::Contains;

namespace {
double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}
double std_of(const std::vector<double>& v) {
  double m = mean_of(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size() - 1));
}
}  // namespace

TEST_CASE("zeros, ones, full, empty, scalar_tensor: values, shapes, dtypes", "[factory]") {
  Tensor z = zeros({2, 3});
  CHECK(z.sizes() == Shape{2, 3});
  CHECK(z.dtype() == kFloat);
  CHECK(z.device().is_cpu());
  CHECK(z.is_contiguous());
  check_values(z, std::vector<double>(6, 0.0));
  check_values(ones({4}, kDouble), {1, 1, 1, 1});
  CHECK(ones({4}, kDouble).dtype() == kDouble);
  check_values(full({2, 2}, -2.5), {-2.5, -2.5, -2.5, -2.5});
  check_values(full({3}, 7.9, kLong), {7, 7, 7});
  check_values(full({2}, 2.0, kBool), {1, 1});
  check_values(full({2}, 3.140625, kBFloat16), {3.140625, 3.140625}, 0);
  CHECK(full({2}, 1.0, kBFloat16).nbytes() == 4);
  Tensor s = scalar_tensor(4.5);
  CHECK(s.dim() == 0);
  CHECK(s.numel() == 1);
  CHECK(s.item() == 4.5);
  CHECK(scalar_tensor(1.0, kDouble).dtype() == kDouble);
  CHECK(zeros({}).dim() == 0);
  CHECK(zeros({0, 5}).numel() == 0);
  CHECK(zeros({0, 5}).to_vector().empty());
  Tensor e = empty({3, 2}, kLong);
  CHECK(e.sizes() == Shape{3, 2});
  CHECK(e.dtype() == kLong);
  Tensor el = empty_like(tensor({1, 2}, {2}, kDouble).expand({3, 2}));
  CHECK(el.sizes() == Shape{3, 2});
  CHECK(el.is_contiguous());
  CHECK(el.dtype() == kDouble);
}

TEST_CASE("factories: the requires_grad option makes a leaf", "[factory][autograd]") {
  TensorOptions opts = TensorOptions().dtype(kDouble).requires_grad(true);
  for (const Tensor& t : {zeros({2}, opts), ones({2}, opts), full({2}, 3.0, opts), empty({2}, opts),
                          rand({2}, opts), randn({2}, opts), from_vector({1, 2}, {2}, opts), arange(2, opts),
                          scalar_tensor(1.0, opts)}) {
    CHECK(t.requires_grad());
    CHECK(t.is_leaf());
    CHECK(t.grad_fn() == nullptr);
    CHECK(t.dtype() == kDouble);
  }
  Tensor w = ones({3}, opts);
  mul(w, 2.0).sum().backward();
  check_values(w.grad(), {2, 2, 2});
  CHECK_FALSE(zeros({2}).requires_grad());
  CHECK(requires_grad().requires_grad());
  CHECK(dtype(kLong).dtype() == kLong);
}

TEST_CASE("arange and from_vector: values and dtypes", "[factory]") {
  check_values(arange(5), {0, 1, 2, 3, 4});
  CHECK(arange(3, kLong).dtype() == kLong);
  CHECK(arange(3, kDouble).dtype() == kDouble);
  CHECK(arange(0).sizes() == Shape{0});
  Tensor long_range = arange(int64_t{1} << 53, int64_t{1} << 53 | 3);  // exact beyond a double's integers
  CHECK(long_range.dtype() == kLong);
  CHECK(long_range.data_ptr<int64_t>()[1] == (int64_t{1} << 53) + 1);
}

TEST_CASE("arange: the dtype is inferred as torch.arange infers it", "[factory]") {
  // Integer arguments give int64; any floating-point argument gives float, the default dtype.
  CHECK(arange(5).dtype() == kLong);
  CHECK(arange(int64_t{5}).dtype() == kLong);
  CHECK(arange(2, 7).dtype() == kLong);
  CHECK(arange(10, 0, -3).dtype() == kLong);
  CHECK(arange(5.0).dtype() == kFloat);
  CHECK(arange(0, 2.5).dtype() == kFloat);
  CHECK(arange(0, 1, 0.25).dtype() == kFloat);
  CHECK(arange(0.5f, 2).dtype() == kFloat);
  // Options without a dtype leave it to the arguments; a dtype in them wins.
  CHECK(arange(4, TensorOptions().device(Device{kMeta})).dtype() == kLong);
  CHECK(arange(4.0, TensorOptions().requires_grad(true)).requires_grad());
  CHECK(arange(4, kFloat).dtype() == kFloat);
  CHECK(arange(0.0, 3.0, kLong).dtype() == kLong);
  CHECK(arange(0, 2, 1, TensorOptions().dtype(kBFloat16)).dtype() == kBFloat16);
}

TEST_CASE("arange: start, end and step", "[factory]") {
  check_values(arange(2, 7), {2, 3, 4, 5, 6});
  check_values(arange(10, 0, -3), {10, 7, 4, 1});
  check_values(arange(-3, 3, 2), {-3, -1, 1});
  check_values(arange(0, 1, 0.25), {0, 0.25, 0.5, 0.75});
  check_values(arange(2.5), {0, 1, 2});  // ceil(2.5) elements
  check_values(arange(1.0, 0.0, -0.5, kDouble), {1, 0.5});
  check_values(arange(0.5, 3.5, kLong), {0, 1, 2});  // each bound truncated to int64 first, as in PyTorch
  CHECK(arange(3, 3).sizes() == Shape{0});
  CHECK(arange(0, 10, 3, Device{kMeta}).sizes() == Shape{4});
  CHECK(arange(0.0, 1.0, 0.1, Device{kMeta}).sizes() == Shape{10});
  Tensor v = from_vector({1.5, -2, 3.25, 4, 5, 6}, {3, 2});
  CHECK(v.sizes() == Shape{3, 2});
  check_values(v, {1.5, -2, 3.25, 4, 5, 6});
  check_values(from_vector({1.9, -1.9}, {2}, kLong), {1, -1});
  check_values(from_vector({0, 0.5}, {2}, kBool), {0, 1});
  check_values(from_vector({7}, {}), {7});
  CHECK(from_vector({}, {0, 3}).sizes() == Shape{0, 3});
  // float64 values round to float32 on the way in
  CHECK(from_vector({0.1}, {1}).item() == static_cast<double>(0.1f));
  CHECK(from_vector({0.1}, {1}, kDouble).item() == 0.1);
}

TEST_CASE("factories allocate what they hold, and Meta factories allocate nothing", "[factory][meta]") {
  int64_t before = memory_allocated(Device{kCPU});
  {
    Tensor a = zeros({1000});
    CHECK(memory_allocated(Device{kCPU}) == before + 4000);
    Tensor b = ones({10, 10}, kDouble);
    CHECK(memory_allocated(Device{kCPU}) == before + 4800);
  }
  CHECK(memory_allocated(Device{kCPU}) == before);
  TensorOptions m = TensorOptions().device(Device{kMeta});
  for (const Tensor& t : {zeros({64, 64}, m), ones({64, 64}, m), full({64, 64}, 2.0, m), empty({64, 64}, m),
                          rand({64, 64}, m), randn({64, 64}, m), arange(4096.0, m).view({64, 64}),
                          from_vector(std::vector<double>(4096, 1.0), {64, 64}, m)}) {
    CHECK(t.is_meta());
    CHECK(t.sizes() == Shape{64, 64});
    CHECK(t.dtype() == kFloat);
  }
  CHECK(zeros({3}, m.dtype(kBFloat16)).dtype() == kBFloat16);
  CHECK(memory_allocated(Device{kCPU}) == before);
  CHECK(memory_allocated(Device{kMeta}) == 0);
  Tensor r = rand({2}, m.requires_grad(true));
  CHECK(r.requires_grad());
}

TEST_CASE("rand and randn: reproducible under manual_seed and the generator state", "[factory][random]") {
  manual_seed(1234);
  RngState start = get_rng_state();
  CHECK(start.seed == 1234);
  CHECK(start.offset == 0);
  Tensor a = rand({5, 7});
  CHECK(get_rng_state().offset == 1);  // one offset per random op call
  Tensor b = randn({5, 7});
  CHECK(get_rng_state().offset == 2);
  Tensor a2 = rand({5, 7});
  CHECK_FALSE(equal(a, a2));  // a new offset, a new stream
  manual_seed(1234);
  CHECK(equal(rand({5, 7}), a));
  CHECK(equal(randn({5, 7}), b));
  // set_rng_state replays from a saved point
  RngState mid = get_rng_state();
  Tensor c = randn({100});
  Tensor d = rand({3}, kDouble);
  set_rng_state(mid);
  CHECK(equal(randn({100}), c));
  CHECK(equal(rand({3}, kDouble), d));
  // an explicit generator leaves the default one alone
  RngState before = get_rng_state();
  Generator g(99);
  Tensor x = randn({10}, {}, &g);
  CHECK(get_rng_state() == before);
  CHECK(g.offset() == 1);
  Generator g2(99);
  CHECK(equal(randn({10}, {}, &g2), x));
  g2.set_state(RngState{99, 0});
  CHECK(equal(randn({10}, {}, &g2), x));
  // element i depends only on (seed, offset, i): a shorter draw is a prefix of a longer one
  Generator p1(5), p2(5);
  std::vector<double> long_draw = rand({1000}, {}, &p1).to_vector(), short_draw = rand({10}, {}, &p2).to_vector();
  for (size_t i = 0; i < 10; ++i) CHECK(long_draw[i] == short_draw[i]);
  // the dtype changes the rounding, not the stream
  Generator q1(6), q2(6);
  check_values(rand({50}, kDouble, &q1), rand({50}, kFloat, &q2).to_vector(), 1e-7);
}

TEST_CASE("rand and randn: ranges and moments", "[factory][random]") {
  Generator g(2024);
  std::vector<double> u = rand({100000}, kDouble, &g).to_vector();
  double lo = 1, hi = 0;
  for (double x : u) lo = std::min(lo, x), hi = std::max(hi, x);
  CHECK(lo >= 0.0);
  CHECK(hi < 1.0);
  CHECK(mean_of(u) == Approx(0.5).margin(0.005));
  CHECK(std_of(u) == Approx(std::sqrt(1.0 / 12)).margin(0.005));
  std::vector<double> n = randn({100000}, kDouble, &g).to_vector();
  CHECK(mean_of(n) == Approx(0.0).margin(0.01));
  CHECK(std_of(n) == Approx(1.0).margin(0.01));
  int beyond3 = 0;
  for (double x : n) beyond3 += std::abs(x) > 3;
  CHECK(beyond3 > 100);  // P(|x| > 3) = 0.27%: 270 expected
  CHECK(beyond3 < 450);
  // uniform_ and normal_ with parameters, on a strided tensor (filled through a contiguous copy)
  Tensor base = zeros({200, 1000}, kDouble);
  Tensor half = base.slice(1, 0, 1000, 2);
  uniform_(half, -2.0, 3.0, &g);
  std::vector<double> hv = half.to_vector();
  double hlo = 10, hhi = -10;
  for (double x : hv) hlo = std::min(hlo, x), hhi = std::max(hhi, x);
  CHECK(hlo >= -2.0);
  CHECK(hhi < 3.0);
  CHECK(mean_of(hv) == Approx(0.5).margin(0.02));
  check_values(base.slice(1, 1, 1000, 2), std::vector<double>(100000, 0.0));  // the other columns untouched
  Tensor nt = zeros({100000}, kDouble);
  normal_(nt, 10.0, 0.5, &g);
  std::vector<double> nv = nt.to_vector();
  CHECK(mean_of(nv) == Approx(10.0).margin(0.01));
  CHECK(std_of(nv) == Approx(0.5).margin(0.005));
  // bf16 draws stay in range
  std::vector<double> b = rand({1000}, kBFloat16, &g).to_vector();
  for (double x : b) REQUIRE((x >= 0.0 && x <= 1.0));
  CHECK(rand({4}, kBFloat16).dtype() == kBFloat16);
}

TEST_CASE("uniform_ and normal_: in place, version bump, Meta advances an explicit generator", "[factory][random]") {
  Tensor t = zeros({4});
  int64_t v0 = t._version();
  Tensor& r = uniform_(t);
  CHECK(r.is_same(t));
  CHECK(t._version() == v0 + 1);
  normal_(t);
  CHECK(t._version() == v0 + 2);
  Generator g(7);
  Tensor m = meta({8});
  normal_(m, 0.0, 1.0, &g);
  uniform_(m, 0.0, 1.0, &g);
  CHECK(g.offset() == 2);
  // the leaf check applies to random fills too
  Tensor w = zeros({2}, TensorOptions().requires_grad(true));
  REQUIRE_THROWS_WITH(uniform_(w), Contains("a leaf Variable that requires grad is being used in an in-place operation"));
  // on a non-leaf: the old value gets no gradient
  Tensor x = leaf({3}, 1);
  Tensor h = mul(x, 2.0);
  normal_(h);
  add(h, x).sum().backward();
  check_values(x.grad(), {1, 1, 1});
}

TEST_CASE("zeros, ones and full are ops a mode sees (their fill is not), dispatched on their device", "[factory][dispatch]") {
  for (Device d : {Device{kCPU}, Device{kMeta}}) {
    INFO(d.str());
    CountOps ops;
    Tensor o = ones({2, 3}, TensorOptions().dtype(kBool).device(d));
    Tensor z = zeros({4}, d);
    Tensor f = full({2}, 2.5, d);
    CHECK(ops.counter->order == std::vector<std::string>{"aten::ones", "aten::zeros", "aten::full"});
    CHECK(o.device() == d);
    CHECK(o.dtype() == kBool);
    CHECK(f.device() == d);
    if (d.is_cpu()) {
      check_values(o.to(kDouble), {1, 1, 1, 1, 1, 1});
      check_values(f, {2.5, 2.5});
    }
  }
  // a boxed call dispatches on its Device argument too (PyTorch's BackendSelect)
  const std::vector<IValue> out =
      find_op("aten::ones").call({IValue(Shape{3}), IValue(kFloat), IValue(Device{kMeta})});
  REQUIRE(out.size() == 1);
  CHECK(out[0].toTensor().device() == Device{kMeta});
  CHECK(out[0].toTensor().sizes() == Shape{3});
}

TEST_CASE("factory error paths", "[factory][errors]") {
  REQUIRE_THROWS_WITH(zeros({2, -1}), Contains("negative dimension -1") && Contains("[2, -1]"));
  REQUIRE_THROWS_WITH(empty({-3}), Contains("negative dimension -3"));
  REQUIRE_THROWS_WITH(rand({-1}), Contains("negative dimension"));
  REQUIRE_THROWS_WITH(full({-2}, 1.0, Device{kMeta}), Contains("negative dimension"));
  REQUIRE_THROWS_WITH(arange(-1), Contains("arange") && Contains("non-negative") && Contains("-1"));
  REQUIRE_THROWS_WITH(arange(-0.5), Contains("arange: upper bound must be non-negative (got -0.5)"));
  REQUIRE_THROWS_WITH(arange(0, 5, 0), Contains("arange: step must be nonzero (start=0, end=5, step=0)"));
  REQUIRE_THROWS_WITH(arange(0.0, 1.0, 0.5, kLong), Contains("arange: step must be nonzero (start=0, end=1, step=0.5)"));
  REQUIRE_THROWS_WITH(arange(5, 0), Contains("arange: upper bound and larger bound inconsistent with step sign "
                                             "(start=5, end=0, step=1)"));
  REQUIRE_THROWS_WITH(arange(0, 5, -1, Device{kMeta}),
                      Contains("arange: upper bound and larger bound inconsistent with step sign"));
  REQUIRE_THROWS_WITH(arange(0.0, std::nan(""), 1.0), Contains("arange: unsupported range (start=0, end=nan, step=1)"));
  REQUIRE_THROWS_WITH(arange(0.0, 1e300, 1e-300), Contains("arange: invalid size, possible overflow?"));
  REQUIRE_THROWS_WITH(arange(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()),
                      Contains("arange: invalid size, possible overflow?"));
  REQUIRE_THROWS_WITH(arange(0.0, 1e19, kLong), Contains("arange: end=1e+19 does not fit the result's dtype Long"));
  REQUIRE_THROWS_WITH(arange(3, kBool), Contains("\"arange\" not implemented for 'Bool'"));
  REQUIRE_THROWS_WITH(from_vector({1, 2, 3}, {2, 2}),
                      Contains("from_vector") && Contains("3 values") && Contains("[2, 2]") && Contains("4 elements"));
  REQUIRE_THROWS_WITH(from_vector({1}, {0}), Contains("from_vector") && Contains("1 values"));
  REQUIRE_THROWS_WITH(rand({2}, kLong), Contains("aten::uniform_") && Contains("floating point") && Contains("Long"));
  REQUIRE_THROWS_WITH(randn({2}, kBool), Contains("aten::normal_") && Contains("Bool"));
  // the Meta kernels check the same
  REQUIRE_THROWS_WITH(rand({2}, TensorOptions().dtype(kLong).device(Device{kMeta})), Contains("aten::uniform_") && Contains("Long"));
  Tensor m = meta({2});
  REQUIRE_THROWS_WITH(normal_(m, 0.0, -1.0), Contains("aten::normal_") && Contains("std >= 0.0"));
  Tensor expanded = zeros({1, 4}).expand({3, 4});
  REQUIRE_THROWS_WITH(normal_(expanded), Contains("aten::normal_") && Contains("more than one element"));
  REQUIRE_THROWS_WITH(uniform_(expanded), Contains("aten::uniform_") && Contains("more than one element"));
  REQUIRE_THROWS_WITH(uniform_(m, 2.0, 1.0), Contains("aten::uniform_") && Contains("from=2"));
  Tensor t = zeros({2});
  REQUIRE_THROWS_WITH(uniform_(t, 1.0, 0.0), Contains("aten::uniform_") && Contains("from=1") && Contains("to=0"));
  REQUIRE_THROWS_WITH(normal_(t, 0.0, -1.0), Contains("aten::normal_") && Contains("std >= 0.0") && Contains("-1"));
  REQUIRE_THROWS_WITH(zeros({2}).item(), Contains("a Tensor with 2 elements cannot be converted to Scalar"));
  REQUIRE_THROWS_WITH(default_generator(Device{kMeta}), Contains("no random generator") && Contains("meta"));
}
