// Tests ops/cuda/factory.cpp: uniform_ and normal_ on CUDA follow the Philox rule of
// engine/core/generator.h, so they draw the CPU's values (uniform_: the same bits), on element
// counts that are not multiples of a block or a vector width, strided destinations and empty
// tensors.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/cuda_op_check.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("uniform_ on CUDA draws the CPU's bits for the same seed and offset", "[factory][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf}) {
    Generator gc(1234), gg(1234);
    gc.set_state(RngState{1234, 17});
    gg.set_state(RngState{1234, 17});
    Tensor c = empty({1001}, dt), g = empty({1001}, TensorOptions().dtype(dt).device(cuda0()));
    uniform_(c, -2.0, 3.0, &gc);
    uniform_(g, -2.0, 3.0, &gg);
    INFO(toString(dt));
    CHECK(equal(g.to(Device(kCPU)), c));
    CHECK(gc.offset() == 18);
    CHECK(gg.offset() == 18);
  }
}

TEST_CASE("normal_ on CUDA draws the CPU's values up to the last bits of the math library", "[factory][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dt : {kFloat, kDouble}) {
    Generator gc(99), gg(99);
    Tensor c = empty({999}, dt), g = empty({999}, TensorOptions().dtype(dt).device(cuda0()));
    normal_(c, 0.5, 2.0, &gc);
    normal_(g, 0.5, 2.0, &gg);
    INFO(toString(dt));
    // logf/cosf of the device and the host may differ by an ulp or two of float.
    CHECK(compare(g, c, Tolerance{1e-5, 1e-5}) == "");
  }
}

TEST_CASE("random fills on CUDA use the device's default generator and handle strided tensors", "[factory][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  manual_seed(7);
  const RngState before = get_rng_state(cuda0());
  CHECK(before.offset == 0);
  Tensor a = rand({3, 4}, TensorOptions().device(cuda0()));
  CHECK(get_rng_state(cuda0()).offset == 1);
  CHECK(get_rng_state(Device(kCPU)).offset == 0);  // the CPU generator is untouched
  set_rng_state(before, cuda0());
  Tensor b = rand({3, 4}, TensorOptions().device(cuda0()));
  CHECK(equal(a, b));
  // A transposed destination receives the values in its logical order.
  Tensor t = empty({4, 3}, TensorOptions().device(cuda0())).t();
  set_rng_state(before, cuda0());
  uniform_(t);
  CHECK(equal(t.contiguous(), a));
  Tensor n = randn({1 << 20}, TensorOptions().device(cuda0()));
  CHECK(std::abs(mean(n).item()) < 0.01);
  REQUIRE_THROWS_WITH(uniform_(t, 2.0, 1.0), Catch::Contains("expects to return a [from, to) range"));
  REQUIRE_THROWS_WITH(normal_(t, 0.0, -1.0), Catch::Contains("expects std >= 0.0"));
  Tensor l = empty({3}, TensorOptions().dtype(kLong).device(cuda0()));
  REQUIRE_THROWS_WITH(uniform_(l), Catch::Contains("floating point"));
}

TEST_CASE("uniform_ and normal_ on CUDA fill every shape and layout with the CPU's values", "[factory][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // Into a destination in the case's layout (never expanded: each element is written once); a
  // generator of its own per run.
  std::vector<Case> cs;
  for (const Case& c : cases(floating_types(), element_shapes()))
    if (c.layout != Layout::Expanded) cs.push_back(c);
  uint64_t seed = 0;
  for (const Case& c : cs) {
    INFO(describe(c));
    CHECK(cuda_vs_cpu(
              [](const std::vector<Tensor>& in) {
                Generator gen(77);
                gen.set_state(RngState{77, 3});
                Tensor dst = in[0];
                uniform_(dst, -2.0, 3.0, &gen);
                return dst;
              },
              {arg(c.shape).in(c.layout).no_grad()}, c.dtype,
              CheckOptions{Tolerance{0, 0}, Tolerance{0, 0}, false, ++seed}) == "");  // the same bits
    {
      // logf/cosf of the device and the host may differ by an ulp or two of float (which may
      // move a 16-bit result by one of its own)
      const Tolerance tol = c.dtype == kFloat || c.dtype == kDouble ? Tolerance{1e-5, 1e-5} : elementwise_tolerance(c.dtype);
      CHECK(cuda_vs_cpu(
                [](const std::vector<Tensor>& in) {
                  Generator gen(78);
                  Tensor dst = in[0];
                  normal_(dst, 0.5, 2.0, &gen);
                  return dst;
                },
                {arg(c.shape).in(c.layout).no_grad()}, c.dtype,
                CheckOptions{tol, tol, false, ++seed}) == "");
    }
  }
}
