// Tests ops/dropout.cpp: native_dropout (the Philox offset rule of engine/core/generator.h),
// native_dropout_backward and the dropout composite.
#include <catch2/catch.hpp>
#include <tuple>

#include "kernels/philox.h"
#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::grad_input;
using remat::testing::meta_empty;
using remat::testing::seeded_randn;
using TL = std::vector<Tensor>;

namespace {

std::vector<bool> bools(const Tensor& mask) {
  std::vector<bool> out;
  for (double v : mask.to_vector()) out.push_back(v != 0.0);
  return out;
}

// The keep mask by the documented rule, straight from kernels/philox.h: element i takes 32-bit
// word i % 4 of philox4x32_10(block i / 4, offset, seed), and is kept iff its uniform < 1 - p.
std::vector<bool> philox_keep_mask(uint64_t seed, uint64_t offset, int64_t n, double p) {
  std::vector<bool> keep;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t word = kernels::philox4x32_10(static_cast<uint64_t>(i) / 4, offset, seed).x[i % 4];
    float u = static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
    keep.push_back(u < static_cast<float>(1.0 - p));
  }
  return keep;
}

}  // namespace

TEST_CASE("native_dropout's mask is pinned by seed, offset and element index", "[dropout]") {
  Generator gen(42);
  gen.set_state({42, 3});
  Tensor x = ones({16}, kDouble);
  auto [out, mask] = native_dropout(x, 0.5, &gen);
  // Computed by an independent (Python) Philox4x32-10 for seed 42, offset 3, p = 0.5.
  std::vector<bool> expected{1, 1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0, 0, 1};
  CHECK(bools(mask) == expected);
  CHECK(bools(mask) == philox_keep_mask(42, 3, 16, 0.5));
  CHECK(gen.offset() == 4);
  // The next call uses offset 4.
  auto [out2, mask2] = native_dropout(x, 0.5, &gen);
  CHECK(bools(mask2) == std::vector<bool>{1, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0});
  // Another seed and p.
  Generator g7(7);
  auto [out3, mask3] = native_dropout(ones({3, 4}), 0.25, &g7);
  CHECK(bools(mask3) == std::vector<bool>{0, 0, 1, 1, 1, 0, 1, 0, 1, 1, 0, 0});
  CHECK(bools(mask3) == philox_keep_mask(7, 0, 12, 0.25));
  // A large call (many threads) follows the same rule.
  gen.set_state({123456789, 77});
  auto [big, big_mask] = native_dropout(ones({300000}), 0.3, &gen);
  CHECK(bools(big_mask) == philox_keep_mask(123456789, 77, 300000, 0.3));
}

TEST_CASE("same seed and offset give the same mask bit for bit; other offsets differ", "[dropout]") {
  Tensor x = seeded_randn({64, 33}, 1, kFloat);
  Generator gen(2024);
  RngState s = gen.get_state();
  auto [o1, m1] = native_dropout(x, 0.4, &gen);
  gen.set_state(s);
  auto [o2, m2] = native_dropout(x, 0.4, &gen);
  CHECK(equal(m1, m2));
  CHECK(equal(o1, o2));
  auto [o3, m3] = native_dropout(x, 0.4, &gen);  // offset s.offset + 1
  CHECK_FALSE(equal(m1, m3));
  gen.set_state({2025, s.offset});  // another seed
  auto [o4, m4] = native_dropout(x, 0.4, &gen);
  CHECK_FALSE(equal(m1, m4));
  // The default generator follows manual_seed.
  manual_seed(99);
  auto [d1, dm1] = native_dropout(x, 0.4);
  manual_seed(99);
  auto [d2, dm2] = native_dropout(x, 0.4);
  CHECK(equal(dm1, dm2));
}

TEST_CASE("the generator offset advances by exactly one per dropout call", "[dropout]") {
  Generator gen(5);
  Tensor x = ones({1000});
  CHECK(gen.offset() == 0);
  native_dropout(x, 0.5, &gen);
  CHECK(gen.offset() == 1);
  native_dropout(ones({0}), 0.5, &gen);  // even an empty call reserves its offset
  CHECK(gen.offset() == 2);
  native_dropout(x, 0.0, &gen);
  native_dropout(x, 1.0, &gen);
  CHECK(gen.offset() == 4);
  dropout(x, 0.5, true, &gen);
  CHECK(gen.offset() == 5);
  // dropout's identity cases draw nothing.
  dropout(x, 0.5, false, &gen);
  dropout(x, 0.0, true, &gen);
  CHECK(gen.offset() == 5);
  // Default generator too.
  manual_seed(1);
  RngState before = get_rng_state();
  dropout(x, 0.1, true);
  CHECK(get_rng_state().offset == before.offset + 1);
}

TEST_CASE("native_dropout scales kept values by 1 / (1 - p) and zeroes the rest", "[dropout]") {
  Tensor x = seeded_randn({10, 7}, 3);
  Generator gen(11);
  auto [out, mask] = native_dropout(x, 0.3, &gen);
  CHECK(mask.dtype() == kBool);
  CHECK(out.dtype() == kDouble);
  std::vector<double> xv = x.to_vector(), ov = out.to_vector();
  std::vector<bool> mv = bools(mask);
  int kept = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (mv[i]) {
      CHECK(ov[i] == Approx(xv[i] / 0.7).epsilon(1e-15));
      ++kept;
    } else {
      CHECK(ov[i] == 0.0);
    }
  }
  CHECK(kept > 0);
  CHECK(kept < 70);
  // native_dropout_backward applies the same map to a gradient.
  Tensor g = seeded_randn({10, 7}, 4);
  std::vector<double> gv = g.to_vector(), dv = native_dropout_backward(g, mask, 1.0 / 0.7).to_vector();
  for (size_t i = 0; i < gv.size(); ++i) CHECK(dv[i] == (mv[i] ? Approx(gv[i] / 0.7).epsilon(1e-15) : Approx(0.0)));
}

TEST_CASE("dropout edge cases p = 0 and p = 1 behave like PyTorch", "[dropout]") {
  Tensor x = seeded_randn({4, 5}, 6).requires_grad_(true);
  Generator gen(8);
  auto [keep_all, mask_all] = native_dropout(x, 0.0, &gen);
  CHECK(equal(keep_all.detach(), x.detach()));
  CHECK(sum(mask_all.to(kDouble)).item() == 20.0);
  auto [drop_all, mask_none] = native_dropout(x, 1.0, &gen);
  CHECK(sum(abs(drop_all.detach())).item() == 0.0);
  CHECK(sum(mask_none.to(kDouble)).item() == 0.0);
  sum(drop_all).backward();
  CHECK(sum(abs(x.grad())).item() == 0.0);  // scale 0: no NaN, no gradient
  // dropout: identity (the input itself) when not training or p == 0.
  CHECK(dropout(x, 0.5, false).is_same(x));
  CHECK(dropout(x, 0.0, true).is_same(x));
  Tensor all_dropped = dropout(x, 1.0, true, &gen);
  CHECK(sum(abs(all_dropped.detach())).item() == 0.0);
}

TEST_CASE("native_dropout on a strided input uses the row-major element index", "[dropout]") {
  Tensor base = seeded_randn({6, 5}, 9);
  Tensor strided = transpose(base, 0, 1);  // [5, 6]
  Generator gen(10);
  RngState s = gen.get_state();
  auto [o1, m1] = native_dropout(strided, 0.5, &gen);
  gen.set_state(s);
  auto [o2, m2] = native_dropout(strided.contiguous(), 0.5, &gen);
  CHECK(equal(m1, m2));
  CHECK(equal(o1, o2));
  CHECK(m1.sizes() == Shape{5, 6});
}

TEST_CASE("dropout gradcheck with a fixed generator state", "[dropout][gradcheck]") {
  Tensor x = grad_input({6, 4}, 12);
  Generator gen(13);
  RngState s = gen.get_state();
  auto fn = [&](const TL& in) {
    gen.set_state(s);  // the same mask on every evaluation
    return TL{std::get<0>(native_dropout(transpose(in[0], 0, 1), 0.4, &gen))};
  };
  CHECK(autograd::gradcheck(fn, {x}));
  auto composite = [&](const TL& in) {
    gen.set_state(s);
    return TL{dropout(slice(in[0], 0, 0, 6, 2), 0.6, true, &gen)};
  };
  CHECK(autograd::gradcheck(composite, {x}));
  CHECK(autograd::gradgradcheck(fn, {x}));
  // native_dropout_backward in its gradient argument.
  Tensor mask = std::get<1>(native_dropout(ones({4, 6}), 0.5, &gen));
  CHECK(autograd::gradcheck([&](const TL& in) { return TL{native_dropout_backward(in[0], mask, 2.0)}; },
                            {grad_input({4, 6}, 14)}));
}

TEST_CASE("dropout in reduced precision keeps the same mask and rounds once", "[dropout][bf16]") {
  Tensor x = seeded_randn({8, 9}, 15, kFloat);
  Generator gen(16);
  RngState s = gen.get_state();
  auto [of, mf] = native_dropout(x, 0.2, &gen);
  for (ScalarType dt : {kBFloat16, kHalf}) {
    gen.set_state(s);
    auto [ol, ml] = native_dropout(x.to(dt), 0.2, &gen);
    CHECK(ol.dtype() == dt);
    CHECK(equal(ml, mf));
    // The float32 computation on the rounded input, rounded once.
    gen.set_state(s);
    Tensor ref = std::get<0>(native_dropout(x.to(dt).to(kFloat), 0.2, &gen)).to(dt);
    CHECK(equal(ol, ref));
  }
}

TEST_CASE("dropout ops on Meta infer shapes, allocate nothing, and advance an explicit generator", "[dropout][meta]") {
  int64_t before = memory_allocated();
  Tensor x = meta_empty({3, 5}, kBFloat16);
  Generator gen(17);
  auto [out, mask] = native_dropout(x, 0.5, &gen);
  CHECK(out.is_meta());
  CHECK(out.dtype() == kBFloat16);
  CHECK(mask.is_meta());
  CHECK(mask.dtype() == kBool);
  CHECK(mask.sizes() == Shape{3, 5});
  CHECK(gen.offset() == 1);
  Tensor g = native_dropout_backward(out, mask, 2.0);
  CHECK(g.is_meta());
  CHECK(g.sizes() == Shape{3, 5});
  CHECK(dropout(x, 0.5, true, &gen).is_meta());
  CHECK(gen.offset() == 2);
  CHECK(memory_allocated() == before);
}

TEST_CASE("dropout errors name the op and the values", "[dropout][errors]") {
  Tensor x = ones({2, 3});
  REQUIRE_THROWS_WITH(dropout(x, 1.5, true),
                      Contains("aten::dropout: dropout probability has to be between 0 and 1, but got 1.5"));
  REQUIRE_THROWS_WITH(dropout(x, -0.1, false), Contains("dropout probability has to be between 0 and 1, but got -0.1"));
  REQUIRE_THROWS_WITH(native_dropout(x, 2.0),
                      Contains("aten::native_dropout: dropout probability has to be between 0 and 1, but got 2"));
  REQUIRE_THROWS_WITH(native_dropout(ones({2}, kLong), 0.5),
                      Contains("aten::native_dropout: expected 'input' to have a floating point dtype, but got Long"));
  REQUIRE_THROWS_WITH(native_dropout_backward(x, ones({2, 3}), 2.0),
                      Contains("aten::native_dropout_backward: Mask should be Bool Scalar Type, but got Float"));
  REQUIRE_THROWS_WITH(
      native_dropout_backward(x, ones({3, 2}, kBool), 2.0),
      Contains("aten::native_dropout_backward: mask of shape [3, 2] does not match grad_output of shape [2, 3]"));
  REQUIRE_THROWS_WITH(native_dropout_backward(ones({2}, kLong), ones({2}, kBool), 2.0),
                      Contains("aten::native_dropout_backward: expected 'grad_output' to have a floating point dtype"));
  REQUIRE_THROWS_WITH(native_dropout_backward(x, meta_empty({2, 3}, kBool), 2.0),
                      Contains("aten::native_dropout_backward: Expected all tensors to be on the same device"));
  REQUIRE_THROWS_WITH(native_dropout_backward(x, Tensor(), 2.0),
                      Contains("aten::native_dropout_backward: argument 'mask' is an undefined tensor"));
}
