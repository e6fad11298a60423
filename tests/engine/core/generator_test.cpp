// Mirrors aten/src/ATen/test/cpu_generator_test.cpp.
// Tests engine/core/generator.cpp (Generator state, the offset rule, default generators,
// manual_seed / get_rng_state / set_rng_state) through the random ops that use it.
#include <catch2/catch.hpp>

#include <cmath>

#include "kernels/philox.h"
#include "remat.h"
#include "tests/testing/counting_mode.h"

using namespace remat;
using remat::testing::values;

TEST_CASE("Generator holds (seed, offset); reserve hands out one offset per call", "[generator]") {
  Generator g(42);
  REQUIRE(g.seed() == 42);
  REQUIRE(g.offset() == 0);
  REQUIRE(g.device() == Device{kCPU});
  REQUIRE(g.reserve() == 0);
  REQUIRE(g.reserve() == 1);
  REQUIRE(g.offset() == 2);
  REQUIRE(g.get_state() == RngState{42, 2});
  g.set_state(RngState{7, 5});
  REQUIRE(g.seed() == 7);
  REQUIRE(g.offset() == 5);
  g.manual_seed(9);
  REQUIRE(g.get_state() == RngState{9, 0});
  REQUIRE(Generator().seed() == 67280421310721ull);  // PyTorch's default seed
}

TEST_CASE("rand follows the documented Philox rule exactly", "[generator]") {
  // Element i of a call at (seed, offset) is word i % 4 of philox(block i / 4, offset, seed),
  // turned into a float from its top 24 bits.
  Generator g(123);
  Tensor first = rand({6}, kFloat, &g);
  Tensor second = rand({6}, kDouble, &g);
  REQUIRE(g.offset() == 2);
  for (uint64_t i = 0; i < 6; ++i) {
    uint32_t w0 = kernels::philox4x32_10(i / 4, 0, 123).x[i % 4];
    uint32_t w1 = kernels::philox4x32_10(i / 4, 1, 123).x[i % 4];
    REQUIRE(values(first)[i] == static_cast<double>(w0 >> 8) / 16777216.0);
    REQUIRE(values(second)[i] == static_cast<double>(w1 >> 8) / 16777216.0);
  }
  // uniform_(from, to) scales the same draws.
  Generator h(123);
  Tensor scaled = make_empty({6}, kDouble, Device{kCPU});
  uniform_(scaled, -2.0, 2.0, &h);
  for (uint64_t i = 0; i < 6; ++i) {
    double u = static_cast<double>(kernels::philox4x32_10(i / 4, 0, 123).x[i % 4] >> 8) / 16777216.0;
    REQUIRE(values(scaled)[i] == -2.0 + 4.0 * u);
  }
}

TEST_CASE("randn uses Box-Muller on the documented words", "[generator]") {
  // Element i: block i / 2, words 2*(i%2) and 2*(i%2)+1.
  Generator g(77);
  Tensor n = randn({8}, kFloat, &g);
  for (uint64_t i = 0; i < 8; ++i) {
    kernels::Philox4 r = kernels::philox4x32_10(i / 2, 0, 77);
    double u1 = 1.0 - static_cast<double>(r.x[2 * (i % 2)] >> 8) / 16777216.0;
    double u2 = static_cast<double>(r.x[2 * (i % 2) + 1] >> 8) / 16777216.0;
    double expected = std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    REQUIRE(values(n)[i] == Approx(expected).epsilon(1e-5).margin(1e-5));  // computed in float
  }
}

TEST_CASE("A random fill of a non-contiguous tensor draws in logical (row-major) order", "[generator]") {
  Generator g(5), h(5);
  Tensor t = zeros({4, 3}, kDouble).transpose(0, 1);  // 3x4, column-major in memory
  uniform_(t, 0.0, 1.0, &g);
  Tensor c = rand({3, 4}, kDouble, &h);
  REQUIRE(equal(t.contiguous(), c));
}

TEST_CASE("manual_seed, get_rng_state and set_rng_state reproduce rand exactly", "[generator]") {
  manual_seed(2024);
  REQUIRE(get_rng_state() == RngState{2024, 0});
  Tensor a = rand({10});
  RngState s = get_rng_state();
  Tensor b = randn({10});
  Tensor c = rand({3, 3});
  set_rng_state(s);
  Tensor b2 = randn({10});
  Tensor c2 = rand({3, 3});
  REQUIRE(equal(b, b2));
  REQUIRE(equal(c, c2));
  manual_seed(2024);
  REQUIRE(equal(rand({10}), a));
  REQUIRE_FALSE(equal(a, b.to(kFloat)));
  manual_seed(2025);
  REQUIRE_FALSE(equal(rand({10}), a));
}

TEST_CASE("Each random op call advances the offset by exactly one, whatever its size", "[generator]") {
  manual_seed(1);
  RngState s0 = get_rng_state();
  rand({1000});
  REQUIRE(get_rng_state().offset == s0.offset + 1);
  randn({3, 3});
  REQUIRE(get_rng_state().offset == s0.offset + 2);
  Tensor x = ones({64});
  normal_(x, 1.0, 2.0);
  REQUIRE(get_rng_state().offset == s0.offset + 3);
  x.fill_(0.5);  // not a random op: no draw
  REQUIRE(get_rng_state().offset == s0.offset + 3);
  Generator own(3);
  rand({10}, kFloat, &own);  // an explicit generator leaves the default one alone
  REQUIRE(get_rng_state().offset == s0.offset + 3);
  REQUIRE(own.offset() == 1);
  REQUIRE(get_rng_state().seed == 1);
}

TEST_CASE("On Meta a random fill draws nothing but advances an explicit generator", "[generator]") {
  Generator g(11);
  Tensor m = empty({4}, Device{kMeta});
  uniform_(m, 0.0, 1.0, &g);
  normal_(m, 0.0, 1.0, &g);
  REQUIRE(g.offset() == 2);
  REQUIRE(m._version() == 2);
}

TEST_CASE("Two random calls never share a counter: the streams differ", "[generator]") {
  Generator g(9);
  Tensor a = rand({64}, kDouble, &g);
  Tensor b = rand({64}, kDouble, &g);
  REQUIRE_FALSE(equal(a, b));
  double mean = 0;
  for (double v : values(a)) {
    REQUIRE(v >= 0.0);
    REQUIRE(v < 1.0);
    mean += v / 64;
  }
  REQUIRE(mean > 0.25);  // 64 uniform draws: the mean is 0.5 +- 0.036 (1 sigma)
  REQUIRE(mean < 0.75);
}

TEST_CASE("default_generator: one per device, errors for devices without one", "[generator]") {
  REQUIRE(&default_generator() == &default_generator(Device{kCPU}));
  REQUIRE_THROWS_WITH(default_generator(Device{kMeta}), "default_generator: no random generator for device meta");
}
