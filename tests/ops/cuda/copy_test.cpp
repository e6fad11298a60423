// Tests ops/cuda/copy.cpp: clone, _to_copy (dtype conversions on the device, and host <->
// device), copy_ within and across devices with broadcasting, fill_/zero_, zeros_like/ones_like,
// cat, triu and slice_backward on CUDA against the CPU.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/cuda.h"

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
