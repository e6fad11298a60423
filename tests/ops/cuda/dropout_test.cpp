// Tests ops/cuda/dropout.cpp: native_dropout's mask on CUDA is the CPU rule's bit for bit
// (kernels/cpu/random.h's dropout_mask_kernel at the same seed and offset), the output is
// x * mask / (1 - p), and native_dropout_backward scales the gradient by the mask; against the
// CPU op, forward and backward, on element counts that are not multiples of a block or a vector
// width, every layout, empty tensors and every floating dtype.
#include <catch2/catch.hpp>

#include "kernels/cpu/random.h"
#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/cuda_op_check.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("the CUDA dropout mask is the CPU's, bit for bit", "[dropout][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (double p : {0.0, 0.1, 0.5, 0.9, 1.0}) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1001}, int64_t{1} << 20}) {
      Generator gen(4242);
      gen.set_state(RngState{4242, 5});
      Tensor x = ones({n}, TensorOptions().device(cuda0()));
      auto [out, mask] = native_dropout(x, p, &gen);
      CHECK(gen.offset() == 6);  // one offset per call
      std::vector<uint8_t> expected(static_cast<size_t>(n));
      kernels::cpu::dropout_mask_kernel(reinterpret_cast<bool*>(expected.data()), n, 4242, 5, p);
      std::vector<double> got = mask.to_vector();
      int64_t mismatches = 0, kept = 0;
      for (int64_t i = 0; i < n; ++i) {
        mismatches += (got[static_cast<size_t>(i)] != 0.0) != (expected[static_cast<size_t>(i)] != 0);
        kept += expected[static_cast<size_t>(i)] != 0;
      }
      INFO("p " << p << " n " << n);
      CHECK(mismatches == 0);
      if (p == 0.0) CHECK(kept == n);
      if (p == 1.0) CHECK(kept == 0);
    }
  }
}

TEST_CASE("native_dropout scales the kept elements and its backward reuses the mask", "[dropout][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    Tensor x = random_cpu({33, 17}, dt, 3);
    Generator gen(11);
    auto [out, mask] = native_dropout(x.to(cuda0()).t(), 0.25, &gen);  // a strided input
    CHECK(out.dtype() == dt);
    CHECK(mask.dtype() == kBool);
    Tensor expected = mul(where(mask.to(Device(kCPU)), x.t(), zeros_like(x.t())), 1.0 / 0.75);
    INFO(toString(dt));
    CHECK(compare(out, expected.to(dt), elementwise_tolerance(dt)) == "");
    Tensor g = random_cpu({17, 33}, dt, 4);
    Tensor dx = native_dropout_backward(g.to(cuda0()), mask, 1.0 / 0.75);
    CHECK(compare(dx, mul(where(mask.to(Device(kCPU)), g, zeros_like(g)), 1.0 / 0.75).to(dt),
                  elementwise_tolerance(dt)) == "");
  }
  auto opt = TensorOptions().device(cuda0());
  REQUIRE_THROWS_WITH(native_dropout(zeros({3}, opt), 1.5), Catch::Contains("dropout probability has to be between 0 and 1"));
  REQUIRE_THROWS_WITH(native_dropout_backward(zeros({3}, opt), zeros({3}, opt), 2.0),
                      Catch::Contains("Mask should be Bool Scalar Type"));
}

TEST_CASE("native_dropout on CUDA and on the CPU give the same mask and output", "[dropout][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dt : {kFloat, kBFloat16}) {
    Tensor x = random_cpu({40, 50}, dt, 9);
    Generator gc(77), gg(77);
    auto [out_cpu, mask_cpu] = native_dropout(x, 0.3, &gc);
    auto [out_gpu, mask_gpu] = native_dropout(x.to(cuda0()), 0.3, &gg);
    INFO(toString(dt));
    CHECK(equal(mask_gpu.to(Device(kCPU)), mask_cpu));
    CHECK(equal(out_gpu.to(Device(kCPU)), out_cpu));  // x * 1/(1-p), rounded once: the same bits
  }
}

TEST_CASE("dropout on CUDA draws from the device's default generator", "[dropout][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  manual_seed(5);
  Tensor x = ones({1000}, TensorOptions().device(cuda0()));
  auto [a, ma] = native_dropout(x, 0.5);
  CHECK(get_rng_state(cuda0()).offset == 1);
  set_rng_state(RngState{5, 0}, cuda0());
  auto [b, mb] = native_dropout(x, 0.5);
  CHECK(equal(ma, mb));
  CHECK(equal(a, b));
}

TEST_CASE("dropout on CUDA matches the CPU, forward and backward, on every shape and layout", "[dropout][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (double p : {0.0, 0.3, 1.0}) {
    const std::string name = "native_dropout p " + std::to_string(p);
    // A generator of its own per run: both devices draw from the same seed and offset.
    check_cases(
        name.c_str(),
        [p](const std::vector<Tensor>& in) {
          Generator gen(2024);
          auto [out, mask] = native_dropout(in[0], p, &gen);
          return std::vector<Tensor>{out, mask};
        },
        cases(floating_types(), element_shapes()),
        [](const Case& c) { return std::vector<Arg>{arg(c.shape).in(c.layout)}; }, Kind::Elementwise);
  }
}
