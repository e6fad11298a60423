// Tests ops/cuda/copy.cpp: clone, _to_copy (dtype conversions on the device, and host <->
// device), copy_ within and across devices with broadcasting, fill_/zero_, zeros_like/ones_like,
// cat, triu and slice_backward on CUDA against the CPU, forward and backward, on element counts
// that are not multiples of a block or a vector width, every layout, empty tensors.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/cuda_op_check.h"

using namespace remat;
using namespace remat::testing;

namespace {
const ScalarType kAllTypes[] = {kFloat, kDouble, kBFloat16, kHalf, kLong, kBool};
Tensor host(const Tensor& t) { return t.to(Device(kCPU)); }
}  // namespace

TEST_CASE("dtype conversions on CUDA round as on the CPU, for every pair", "[copy][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // Values that exercise rounding: halfway cases for 16-bit types, negatives, zero, large.
  Tensor src = from_vector({0.0, -1.0, 1.00390625, 1.0048828125, 65504.0, -3.5, 257.25, 1e-3, 7.0, -0.0}, {10},
                           kDouble);
  for (ScalarType from : kAllTypes) {
    Tensor a = src.to(from);
    for (ScalarType to : kAllTypes) {
      INFO(toString(from) << " -> " << toString(to));
      CHECK(equal(host(a.to(cuda0()).to(to)), a.to(to)));
    }
  }
}

TEST_CASE("clone and contiguous of strided CUDA tensors", "[copy][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = random_cpu({4, 5, 6}, kFloat, 1);
  Tensor g = x.to(cuda0());
  Tensor p = g.permute({2, 0, 1});
  CHECK_FALSE(p.is_contiguous());
  Tensor c = p.contiguous();
  CHECK(c.is_contiguous());
  CHECK(equal(host(c), x.permute({2, 0, 1}).contiguous()));
  CHECK(equal(host(clone(g.slice(1, 1, 5, 2))), clone(x.slice(1, 1, 5, 2))));
  CHECK(equal(host(g.expand({3, 4, 5, 6}).contiguous()), x.expand({3, 4, 5, 6}).contiguous()));
}

TEST_CASE("to(device) and copy_ move data between host and device", "[copy][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = random_cpu({7, 9}, kFloat, 2);
  Tensor g = x.to(cuda0());
  CHECK(g.device() == cuda0());
  CHECK(equal(host(g), x));
  // host <- device with a dtype change and a transposed destination
  Tensor dst = zeros({9, 7}, kDouble).t();
  dst.copy_(g);
  CHECK(equal(dst, x.to(kDouble)));
  // device <- host with broadcasting into a strided destination
  Tensor gd = zeros({9, 7}, TensorOptions().device(cuda0())).t();
  Tensor row = random_cpu({9}, kDouble, 3);
  gd.copy_(row);
  CHECK(equal(host(gd), row.to(kFloat).expand({7, 9})));
  // device <- device (same device), broadcasting and converting
  Tensor gh = zeros({7, 9}, TensorOptions().dtype(kHalf).device(cuda0()));
  const int64_t v = gh._version();
  gh.copy_(g.slice(0, 0, 1));
  CHECK(gh._version() == v + 1);
  CHECK(equal(host(gh), x.slice(0, 0, 1).expand({7, 9}).to(kHalf)));
  // _to_copy straight to the host with a dtype
  CHECK(equal(_to_copy(g, kBFloat16, Device(kCPU)), x.to(kBFloat16)));
  // The CPU's messages (ops/copy.cpp): [4] does not broadcast with [3] at all; [2, 3] does, to a
  // shape that is not the destination's.
  REQUIRE_THROWS_WITH(zeros({3}, TensorOptions().device(cuda0())).copy_(zeros({4})),
                      Catch::Contains("aten::copy_") && Catch::Contains("must match the size of tensor b (4)"));
  REQUIRE_THROWS_WITH(zeros({3}, TensorOptions().device(cuda0())).copy_(zeros({2, 3})),
                      Catch::Contains("cannot be broadcast to the destination's shape"));
}

TEST_CASE("copies between two CUDA devices", "[copy][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  if (cuda_device_count() < 2) {
    WARN("one CUDA device: cross-device copy skipped");
    return;
  }
  Tensor x = random_cpu({100}, kFloat, 4);
  Tensor a = x.to(cuda0());
  Tensor b = a.to(Device(kCUDA, 1));
  CHECK(b.device() == Device(kCUDA, 1));
  CHECK(equal(host(b), x));
  Tensor c = zeros({100}, TensorOptions().dtype(kDouble).device(Device(kCUDA, 1)));
  c.copy_(a);
  CHECK(equal(host(c), x.to(kDouble)));
}

TEST_CASE("fill_, zero_, zeros_like, ones_like on CUDA", "[copy][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dt : kAllTypes) {
    INFO(toString(dt));
    Tensor t = empty({5, 3}, TensorOptions().dtype(dt).device(cuda0()));
    t.fill_(2.5);
    CHECK(equal(host(t), full({5, 3}, 2.5, dt)));
    t.t().zero_();
    CHECK(equal(host(t), zeros({5, 3}, dt)));
    CHECK(equal(host(ones_like(t)), ones({5, 3}, dt)));
    CHECK(equal(host(zeros_like(t)), zeros({5, 3}, dt)));
    CHECK(full({4}, 1.0, TensorOptions().dtype(dt).device(cuda0())).is_cuda());
  }
}

TEST_CASE("cat, triu and slice_backward on CUDA match the CPU", "[copy][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor a = random_cpu({2, 3, 4}, kFloat, 5), b = random_cpu({2, 5, 4}, kDouble, 6), c = random_cpu({2, 1, 4}, kFloat, 7);
  CHECK(equal(host(cat({a.to(cuda0()), b.to(cuda0()), c.to(cuda0())}, 1)), cat({a, b, c}, 1)));
  CHECK(equal(host(cat({a.to(cuda0()).transpose(0, 2), a.to(cuda0()).transpose(0, 2)}, -1)),
              cat({a.transpose(0, 2), a.transpose(0, 2)}, -1)));
  REQUIRE_THROWS_WITH(cat({a.to(cuda0()), a}, 0), Catch::Contains("Expected all tensors to be on the same device"));
  Tensor m = random_cpu({3, 5, 6}, kFloat, 8);
  for (int64_t k : {-2, 0, 1, 4}) {
    CHECK(equal(host(triu(m.to(cuda0()), k)), triu(m, k)));
    CHECK(equal(host(triu(m.to(cuda0()).transpose(1, 2), k)), triu(m.transpose(1, 2), k)));
  }
  REQUIRE_THROWS_WITH(triu(zeros({3}, TensorOptions().device(cuda0()))), Catch::Contains("at least 2 dimensions"));
  Tensor g = random_cpu({3, 2}, kFloat, 9);
  CHECK(equal(host(slice_backward(g.to(cuda0()), {3, 7}, 1, 1, 5, 2)), slice_backward(g, {3, 7}, 1, 1, 5, 2)));
}

TEST_CASE("gradcheck in float64 on CUDA through copies", "[copy][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = random_cpu({3, 4}, kDouble, 10).to(cuda0()).requires_grad_();
  Tensor y = random_cpu({2, 4}, kDouble, 11).to(cuda0()).requires_grad_();
  CHECK(autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{cat({in[0], in[1]}, 0)}; }, {x, y}));
  CHECK(autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{triu(in[0].t().contiguous(), 1)}; }, {x}));
  CHECK(autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].to(Device(kCPU)).sin()}; }, {x}));
}

TEST_CASE("dtype conversions, clone and contiguous on CUDA match the CPU on every shape and layout, with gradients",
          "[copy][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const std::vector<Case> cs = cases(floating_types(), element_shapes());
  for (ScalarType to : {kFloat, kDouble, kBFloat16, kHalf, kLong, kBool}) {
    const std::string name = std::string("to ") + toString(to);
    check_cases(
        name.c_str(), [to](const std::vector<Tensor>& in) { return in[0].to(to); }, cs,
        [](const Case& c) { return std::vector<Arg>{arg(c.shape, -300, 300).in(c.layout)}; }, Kind::Elementwise);
  }
  check_cases(
      "clone", [](const std::vector<Tensor>& in) { return clone(in[0]); }, cs,
      [](const Case& c) { return std::vector<Arg>{arg(c.shape).in(c.layout)}; }, Kind::Elementwise);
  check_cases(
      "contiguous", [](const std::vector<Tensor>& in) { return in[0].contiguous(); }, cs,
      [](const Case& c) { return std::vector<Arg>{arg(c.shape).in(c.layout)}; }, Kind::Elementwise);
  // Long sources in every layout.
  for (ScalarType to : {kFloat, kHalf, kBool}) {
    check_cases(
        (std::string("Long to ") + toString(to)).c_str(), [to](const std::vector<Tensor>& in) { return in[0].to(to); },
        cases({kLong}, element_shapes()),
        [](const Case& c) { return std::vector<Arg>{arg(c.shape, -1000, 1000).in(c.layout)}; }, Kind::Elementwise,
        /*backward=*/false);
  }
}

TEST_CASE("copy_ into strided CUDA destinations matches the CPU", "[copy][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // dst (the case's layout, but never expanded: a copy writes each element once) <- src (Double:
  // a conversion; of the same shape, or broadcast from the last dim).
  uint64_t seed = 0;
  for (const Case& c : cases(floating_types(), element_shapes())) {
    if (c.layout == Layout::Expanded) continue;
    for (bool broadcast : {false, true}) {
      const Shape src_shape = broadcast && !c.shape.empty() ? Shape{c.shape.back()} : c.shape;
      INFO(describe(c) << " from " << str(src_shape));
      CHECK(cuda_vs_cpu(
                [](const std::vector<Tensor>& in) {
                  // into the strided destination: from the host, then on the device
                  Tensor dst = in[0];
                  dst.copy_(in[1].to(Device(kCPU)));
                  Tensor first = dst.clone();
                  dst.copy_(neg(in[1]));
                  // from the strided source to the host, into a transposed host destination
                  Tensor host = in[0].dim() == 2 ? empty({in[0].size(1), in[0].size(0)}, kDouble).t()
                                                 : empty(in[0].sizes(), kDouble);
                  host.copy_(in[0]);
                  return std::vector<Tensor>{first, dst, host.to(in[0].device())};
                },
                {arg(c.shape).in(c.layout).no_grad(), arg(src_shape).of(kDouble)}, c.dtype,
                options(Kind::Elementwise, c.dtype, Kind::Elementwise, false, ++seed)) == "");
    }
  }
}

TEST_CASE("cat, triu and slice on CUDA match the CPU, forward and backward, on every shape and layout",
          "[copy][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const std::vector<Case> cs = cases(floating_types(), element_shapes());
  // cat along the last dim and along dim 0, with an operand of another length there.
  check_cases(
      "cat last dim", [](const std::vector<Tensor>& in) { return cat({in[0], in[1], in[0]}, -1); }, cs,
      [](const Case& c) {
        Shape other = c.shape;
        if (!other.empty()) other.back() = 3;
        return std::vector<Arg>{arg(c.shape).in(c.layout), arg(other)};
      },
      Kind::Reduction);  // in[0]'s gradient is the sum of two slices
  check_cases(
      "cat dim 0", [](const std::vector<Tensor>& in) { return cat({in[1], in[0]}, 0); }, cs,
      [](const Case& c) {
        Shape other = c.shape;
        if (!other.empty()) other[0] = 2;
        return std::vector<Arg>{arg(c.shape).in(c.layout), arg(other)};
      },
      Kind::Elementwise);
  // triu of matrices (and a batch of them) at several diagonals.
  std::vector<Case> mats;
  for (const Case& c : cases(floating_types(), {{33, 31}, {3, 1025}, {2, 33, 33}, {5, 0}, {1, 1}}))
    mats.push_back(c);
  for (int64_t k : {-2, 0, 1, 30}) {
    check_cases(
        ("triu " + std::to_string(k)).c_str(), [k](const std::vector<Tensor>& in) { return triu(in[0], k); }, mats,
        [](const Case& c) { return std::vector<Arg>{arg(c.shape).in(c.layout)}; }, Kind::Elementwise);
  }
  // slice (its backward is slice_backward), with a step, along the last dim.
  check_cases(
      "slice", [](const std::vector<Tensor>& in) { return in[0].slice(-1, 1, in[0].sizes().back(), 3); }, cs,
      [](const Case& c) { return std::vector<Arg>{arg(c.shape).in(c.layout)}; }, Kind::Elementwise);
}
