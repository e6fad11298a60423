// Tests ops/normalization.cpp: native_layer_norm(_backward), layer_norm, _fused_rms_norm(_backward),
// rms_norm, and their derivative rules (ops/autograd/norm_backward.cpp for double backward).
#include <any>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::all_close;
using remat::testing::check_values;
using remat::testing::grad_input;
using remat::testing::meta_empty;
using remat::testing::seeded_randn;
using TL = std::vector<Tensor>;

TEST_CASE("layer_norm matches hand-computed values", "[layer_norm]") {
  Tensor x = from_vector({1, 2, 3, 4}, {1, 4}, kDouble);
  // mean 2.5, variance 1.25 (biased), rstd = 1 / sqrt(1.25)
  auto [out, mean, rstd] = native_layer_norm(x, {4}, Tensor(), Tensor(), 0.0);
  check_values(out, {-1.3416407864998738, -0.4472135954999579, 0.4472135954999579, 1.3416407864998738});
  check_values(mean, {2.5});
  check_values(rstd, {0.8944271909999159});
  CHECK(mean.sizes() == Shape{1, 1});

  Tensor w = from_vector({1, 2, 0.5, -1}, {4}, kDouble), b = from_vector({0, 1, 2, 3}, {4}, kDouble);
  check_values(layer_norm(x, {4}, w, b, 0.0),
               {-1.3416407864998738, 0.1055728090000842, 2.223606797749979, 1.6583592135001262});

  // eps enters under the square root: [0, 0, 0, 4] has mean 1, variance 3; rstd = 1 / sqrt(3.25)
  check_values(layer_norm(from_vector({0, 0, 0, 4}, {4}, kDouble), {4}, Tensor(), Tensor(), 0.25),
               {-0.5547001962252291, -0.5547001962252291, -0.5547001962252291, 1.6641005886756874});
}

TEST_CASE("native_layer_norm statistics have PyTorch's shapes and dtypes", "[layer_norm]") {
  Tensor x = seeded_randn({2, 3, 4}, 1, kFloat);
  auto [o1, m1, r1] = native_layer_norm(x, {4}, Tensor(), Tensor(), 1e-5);
  CHECK(m1.sizes() == Shape{2, 3, 1});
  CHECK(r1.sizes() == Shape{2, 3, 1});
  auto [o2, m2, r2] = native_layer_norm(x, {3, 4}, Tensor(), Tensor(), 1e-5);
  CHECK(m2.sizes() == Shape{2, 1, 1});
  CHECK(o2.sizes() == Shape{2, 3, 4});
  CHECK(m2.dtype() == kFloat);
  // PyTorch's CPU kernel returns a 16-bit input's statistics in its dtype (param_scalar_type),
  // Float when a weight or bias is Float (mixed); its CUDA kernel in Float (tests/ops/cuda)
  auto [o3, m3, r3] = native_layer_norm(x.to(kBFloat16), {4}, Tensor(), Tensor(), 1e-5);
  CHECK(o3.dtype() == kBFloat16);
  CHECK(m3.dtype() == kBFloat16);
  CHECK(r3.dtype() == kBFloat16);
  auto [o_mixed, m5, r_mixed] = native_layer_norm(x.to(kBFloat16), {4}, ones({4}), Tensor(), 1e-5);
  CHECK(o_mixed.dtype() == kBFloat16);
  CHECK(m5.dtype() == kFloat);
  CHECK(r_mixed.dtype() == kFloat);
  auto [o4, m4, r4] = native_layer_norm(x.to(kDouble), {4}, Tensor(), Tensor(), 1e-5);
  CHECK(m4.dtype() == kDouble);
  auto [o5, r5] = _fused_rms_norm(x.to(kHalf), {3, 4}, Tensor(), 1e-6);
  CHECK(o5.dtype() == kHalf);
  CHECK(r5.dtype() == kFloat);
  CHECK(r5.sizes() == Shape{2, 1, 1});
}

TEST_CASE("rms_norm matches hand-computed values", "[rms_norm]") {
  // mean square 12.5, rstd = 1 / sqrt(12.5)
  Tensor x = from_vector({3, 4}, {1, 2}, kDouble);
  auto [out, rstd] = _fused_rms_norm(x, {2}, Tensor(), 0.0);
  check_values(out, {0.848528137423857, 1.1313708498984762});
  check_values(rstd, {0.28284271247461906});
  check_values(rms_norm(x, {2}, from_vector({2, -1}, {2}, kDouble), 0.0), {1.697056274847714, -1.1313708498984762});
  check_values(rms_norm(from_vector({1, 1}, {2}, kDouble), {2}, Tensor(), 1.0),
               {0.7071067811865475, 0.7071067811865475});
}

TEST_CASE("norms accept strided inputs", "[layer_norm][rms_norm]") {
  Tensor base = seeded_randn({5, 3, 4}, 2);
  Tensor strided = transpose(base, 0, 2);  // [4, 3, 5]
  Tensor dense = strided.contiguous();
  Tensor w = seeded_randn({3, 5}, 3), b = seeded_randn({3, 5}, 4);
  CHECK(remat::testing::max_abs_diff(layer_norm(strided, {3, 5}, w, b), layer_norm(dense, {3, 5}, w, b)) == 0.0);
  CHECK(remat::testing::max_abs_diff(rms_norm(strided, {5}, slice(w, 0, 0, 1, 1).view({5})),
                                     rms_norm(dense, {5}, w.slice(0, 0, 1).view({5}))) == 0.0);
  // A strided weight is fine too.
  Tensor wt = transpose(seeded_randn({5, 3}, 5), 0, 1);
  CHECK(remat::testing::max_abs_diff(layer_norm(dense, {3, 5}, wt, Tensor()),
                                     layer_norm(dense, {3, 5}, wt.contiguous(), Tensor())) == 0.0);
}

TEST_CASE("layer_norm keeps its precision on rows far from zero, and gives NaN for a row with inf or NaN",
          "[layer_norm]") {
  // Rows of 256 and 40 (the GPT's width; vectors and a tail) at an offset large against their
  // spread: a variance as E[x^2] - mean^2 would cancel (1e4^2 in float: 6 units of rounding
  // against a variance of 2), PyTorch's (Welford's) does not. Contiguous rows run the AVX-512
  // kernels (on AMD from Zen 4 two rows at a time); a strided input takes the same path after its copy.
  for (int64_t n : {int64_t{256}, int64_t{40}}) {
    for (double offset : {0.0, 1e3, 1e4}) {
      const int64_t rows = 3;
      std::vector<double> v(rows * n);
      for (int64_t i = 0; i < rows * n; ++i) v[i] = offset + double((i * 7) % 5) - 2.0 + 0.25 * double(i / n);
      for (ScalarType dt : {kFloat, kDouble}) {
        Tensor x = from_vector(v, {rows, n}, dt);
        const std::vector<double> xd = x.to(kDouble).to_vector();
        const std::vector<double> y = layer_norm(x, {n}).to(kDouble).to_vector();
        double worst = 0;
        for (int64_t r = 0; r < rows; ++r) {
          double mean = 0, var = 0;
          for (int64_t j = 0; j < n; ++j) mean += xd[r * n + j] / double(n);
          for (int64_t j = 0; j < n; ++j) var += (xd[r * n + j] - mean) * (xd[r * n + j] - mean) / double(n);
          for (int64_t j = 0; j < n; ++j)
            worst = std::max(worst, std::abs(y[r * n + j] - (xd[r * n + j] - mean) / std::sqrt(var + 1e-5)));
        }
        INFO(toString(dt) << ", rows of " << n << " at offset " << offset << ": worst error " << worst);
        // the row's values are exact; the mean's rounding (offset times the unit roundoff) moves every
        // output by that over the spread (about 1.4). A cancelling variance would be off by O(1).
        CHECK(worst < (dt == kFloat ? 1e-5 + 1e-7 * offset : 1e-12 + 1e-15 * offset));
      }
    }
  }
  const double inf = std::numeric_limits<double>::infinity();
  for (double bad : {inf, -inf, std::nan("")}) {
    std::vector<double> v(2 * 64, 1.5);
    for (int64_t j = 0; j < 64; ++j) v[static_cast<size_t>(64 + j)] = 0.1 * double(j);
    v[37] = bad;  // row 0 only
    for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
      const std::vector<double> y = layer_norm(from_vector(v, {2, 64}, dt), {64}).to(kDouble).to_vector();
      INFO(toString(dt) << ", " << bad << " in row 0: y[0] = " << y[0] << ", y[64] = " << y[64]);
      for (int64_t j = 0; j < 64; ++j) CHECK(std::isnan(y[static_cast<size_t>(j)]));
      for (int64_t j = 64; j < 128; ++j) CHECK(std::isfinite(y[static_cast<size_t>(j)]));  // row 1 untouched
    }
  }
}

TEST_CASE("layer_norm gradcheck with and without affine parameters on strided inputs", "[layer_norm][gradcheck]") {
  Tensor x = grad_input({5, 3, 2}, 11);
  Tensor w = grad_input({3, 5}, 12), b = grad_input({3, 5}, 13);
  auto strided = [](const Tensor& t) { return transpose(t, 0, 2); };  // [2, 3, 5]
  CHECK(autograd::gradcheck(
      [&](const TL& in) {
        return TL{layer_norm(strided(in[0]), {3, 5}, in[1], in[2], 1e-5)};
      },
      {x, w, b}));
  CHECK(autograd::gradcheck([&](const TL& in) { return TL{layer_norm(strided(in[0]), {5}, Tensor(), Tensor(), 1e-5)}; },
                            {x}));
  Tensor w5 = grad_input({5}, 14), b5 = grad_input({5}, 15);
  CHECK(autograd::gradcheck([&](const TL& in) { return TL{layer_norm(strided(in[0]), {5}, in[1], Tensor(), 1e-5)}; },
                            {x, w5}));
  CHECK(autograd::gradcheck([&](const TL& in) { return TL{layer_norm(in[0], {2}, Tensor(), in[1], 0.1)}; },
                            {x, grad_input({2}, 16)}));
}

TEST_CASE("layer_norm second-order gradcheck", "[layer_norm][gradgradcheck]") {
  Tensor x = grad_input({3, 4}, 21);
  Tensor w = grad_input({4}, 22), b = grad_input({4}, 23);
  CHECK(
      autograd::gradgradcheck([](const TL& in) { return TL{layer_norm(in[0], {4}, in[1], in[2], 1e-5)}; }, {x, w, b}));
  CHECK(autograd::gradgradcheck(
      [](const TL& in) { return TL{layer_norm(transpose(in[0], 0, 1), {3}, Tensor(), Tensor(), 1e-5)}; }, {x}));
  Tensor x3 = grad_input({2, 2, 3}, 24);
  CHECK(autograd::gradgradcheck(
      [](const TL& in) {
        return TL{layer_norm(in[0], {2, 3}, in[1], Tensor(), 1e-3)};
      },
      {x3, grad_input({2, 3}, 25)}));
}

TEST_CASE("native_layer_norm_backward is differentiable in grad_out, input and weight", "[layer_norm][gradcheck]") {
  // mean/rstd come from the forward of the (shifted) input, as in a real graph; the rule's input
  // gradient accounts for them.
  Tensor g = grad_input({3, 4}, 31), x = grad_input({3, 4}, 32), w = grad_input({4}, 33), b = grad_input({4}, 34);
  auto fn = [](const TL& in) {
    auto [out, mean, rstd] = native_layer_norm(in[1], {4}, in[2], in[3], 1e-5);
    auto [dx, dw, db] = native_layer_norm_backward(in[0], in[1], {4}, mean, rstd, in[2], in[3]);
    return TL{dx, dw, db};
  };
  CHECK(autograd::gradcheck(fn, {g, x, w, b}));
  auto no_affine = [](const TL& in) {
    auto [out, mean, rstd] = native_layer_norm(in[1], {2, 2}, Tensor(), Tensor(), 1e-5);
    return TL{std::get<0>(native_layer_norm_backward(in[0], in[1], {2, 2}, mean, rstd, Tensor(), Tensor()))};
  };
  CHECK(autograd::gradcheck(no_affine, {grad_input({3, 2, 2}, 35), grad_input({3, 2, 2}, 36)}));
}

TEST_CASE("rms_norm gradcheck and second-order gradcheck", "[rms_norm][gradcheck]") {
  Tensor x = grad_input({4, 3, 2}, 41);
  Tensor w = grad_input({3, 4}, 42);
  CHECK(autograd::gradcheck(
      [](const TL& in) {
        return TL{rms_norm(transpose(in[0], 0, 2), {3, 4}, in[1], 1e-6)};
      },
      {x, w}));
  CHECK(autograd::gradcheck([](const TL& in) { return TL{rms_norm(in[0], {2}, Tensor(), 1e-6)}; }, {x}));
  Tensor x2 = grad_input({3, 4}, 43), w2 = grad_input({4}, 44);
  CHECK(autograd::gradgradcheck([](const TL& in) { return TL{rms_norm(in[0], {4}, in[1], 1e-6)}; }, {x2, w2}));
  CHECK(autograd::gradgradcheck([](const TL& in) { return TL{rms_norm(transpose(in[0], 0, 1), {3}, Tensor(), 1e-6)}; },
                                {x2}));
  Tensor g = grad_input({3, 4}, 45);
  auto fn = [](const TL& in) {
    auto [out, rstd] = _fused_rms_norm(in[1], {4}, in[2], 1e-6);
    auto [dx, dw] = _fused_rms_norm_backward(in[0], in[1], {4}, rstd, in[2]);
    return TL{dx, dw};
  };
  CHECK(autograd::gradcheck(fn, {g, x2, w2}));
}

TEST_CASE("the backward kernels match the formulas", "[layer_norm][rms_norm]") {
  // One row: xhat = (x - mean) * rstd; dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)), gh = g * w
  Tensor x = from_vector({1, 2, 4}, {1, 3}, kDouble), g = from_vector({0.5, -1, 2}, {1, 3}, kDouble);
  Tensor w = from_vector({2, 1, -1}, {3}, kDouble), b = zeros({3}, kDouble);
  auto [out, mean, rstd] = native_layer_norm(x, {3}, w, b, 0.0);
  auto [dx, dw, db] = native_layer_norm_backward(g, x, {3}, mean, rstd, w, b);
  double mu = 7.0 / 3.0, r = 1.0 / std::sqrt(((1 - mu) * (1 - mu) + (2 - mu) * (2 - mu) + (4 - mu) * (4 - mu)) / 3.0);
  double xh[3] = {(1 - mu) * r, (2 - mu) * r, (4 - mu) * r}, gh[3] = {1.0, -1.0, -2.0};
  double mg = (gh[0] + gh[1] + gh[2]) / 3, mgx = (gh[0] * xh[0] + gh[1] * xh[1] + gh[2] * xh[2]) / 3;
  check_values(dx, {r * (gh[0] - mg - xh[0] * mgx), r * (gh[1] - mg - xh[1] * mgx), r * (gh[2] - mg - xh[2] * mgx)});
  check_values(dw, {0.5 * xh[0], -1 * xh[1], 2 * xh[2]});
  check_values(db, {0.5, -1, 2});
  // RMS: xhat = x * rstd; dx = rstd * (gh - xhat * mean(gh * xhat))
  auto [rout, rr] = _fused_rms_norm(x, {3}, w, 0.0);
  auto [rdx, rdw] = _fused_rms_norm_backward(g, x, {3}, rr, w);
  double q = 1.0 / std::sqrt((1 + 4 + 16) / 3.0);
  double rx[3] = {q, 2 * q, 4 * q};
  double rm = (gh[0] * rx[0] + gh[1] * rx[1] + gh[2] * rx[2]) / 3;
  check_values(rdx, {q * (gh[0] - rx[0] * rm), q * (gh[1] - rx[1] * rm), q * (gh[2] - rx[2] * rm)});
  check_values(rdw, {0.5 * rx[0], -1 * rx[1], 2 * rx[2]});
}

TEST_CASE("norms in BFloat16 accumulate in float32", "[layer_norm][rms_norm][bf16]") {
  Tensor x = mul(seeded_randn({6, 40}, 51, kFloat), 3.0);
  Tensor w = seeded_randn({40}, 52, kFloat), b = seeded_randn({40}, 53, kFloat);
  for (ScalarType dt : {kBFloat16, kHalf}) {
    Tensor xl = x.to(dt), wl = w.to(dt), bl = b.to(dt);
    // Reference: float32 on the same rounded values.
    Tensor xr = xl.to(kFloat), wr = wl.to(kFloat), br = bl.to(kFloat);
    auto [out, mean, rstd] = native_layer_norm(xl, {40}, wl, bl, 1e-5);
    auto [rout, rmean, rrstd] = native_layer_norm(xr, {40}, wr, br, 1e-5);
    // the statistics are float32 computations, returned in the input's dtype (one rounding)
    CHECK(mean.dtype() == dt);
    CHECK(all_close(mean.to(kFloat), rmean.to(dt).to(kFloat), 1e-6, 1e-6));
    CHECK(all_close(rstd.to(kFloat), rrstd.to(dt).to(kFloat), 1e-6, 1e-6));
    double tol = dt == kBFloat16 ? 1e-2 : 2e-3;  // one rounding of the output
    CHECK(all_close(out.to(kFloat), rout, tol, tol));
    Tensor g = seeded_randn({6, 40}, 54, kFloat).to(dt);
    auto [dx, dw, db] = native_layer_norm_backward(g, xl, {40}, mean, rstd, wl, bl);
    auto [rdx, rdw, rdb] = native_layer_norm_backward(g.to(kFloat), xr, {40}, rmean, rrstd, wr, br);
    CHECK(dx.dtype() == dt);
    CHECK(dw.dtype() == dt);
    CHECK(all_close(dx.to(kFloat), rdx, tol, tol));
    CHECK(all_close(dw.to(kFloat), rdw, tol, tol));
    CHECK(all_close(db.to(kFloat), rdb, tol, tol));

    auto [ro, rs] = _fused_rms_norm(xl, {40}, wl, 1e-6);
    auto [rro, rrs] = _fused_rms_norm(xr, {40}, wr, 1e-6);
    CHECK(all_close(rs, rrs, 1e-6, 1e-6));
    CHECK(all_close(ro.to(kFloat), rro, tol, tol));
    auto [rdx2, rdw2] = _fused_rms_norm_backward(g, xl, {40}, rs, wl);
    auto [rrdx2, rrdw2] = _fused_rms_norm_backward(g.to(kFloat), xr, {40}, rrs, wr);
    CHECK(all_close(rdx2.to(kFloat), rrdx2, tol, tol));
    CHECK(all_close(rdw2.to(kFloat), rrdw2, tol, tol));
  }
}

TEST_CASE("a BFloat16 input may have Float parameters (mixed type)", "[layer_norm][bf16]") {
  Tensor x = seeded_randn({3, 8}, 61, kFloat).to(kBFloat16).requires_grad_(true);
  Tensor w = seeded_randn({8}, 62, kFloat).requires_grad_(true), b = seeded_randn({8}, 63, kFloat).requires_grad_(true);
  Tensor y = layer_norm(x, {8}, w, b);
  CHECK(y.dtype() == kBFloat16);
  Tensor reference = layer_norm(x.detach().to(kFloat), {8}, w.detach(), b.detach());
  CHECK(all_close(y.to(kFloat), reference, 1e-2, 1e-2));
  sum(y).backward();
  CHECK(w.grad().dtype() == kFloat);
  CHECK(b.grad().dtype() == kFloat);
  CHECK(x.grad().dtype() == kBFloat16);
  Tensor r = rms_norm(x.detach(), {8}, w.detach());
  CHECK(r.dtype() == kBFloat16);
}

TEST_CASE("layer_norm decomposes to native_layer_norm and saves input, mean, rstd, weight, bias", "[layer_norm]") {
  Tensor x = seeded_randn({2, 4}, 71).requires_grad_(true);
  Tensor w = seeded_randn({4}, 72).requires_grad_(true), b = seeded_randn({4}, 73).requires_grad_(true);
  int packs = 0;
  auto counter = std::make_shared<remat::testing::OpCounter>();
  {
    autograd::saved_tensors_hooks hooks(
        [&](const Tensor& t) -> std::any {
          ++packs;
          return t.detach();
        },
        [](const std::any& a) { return std::any_cast<Tensor>(a); });
    DispatchModeGuard guard(counter);
    Tensor y = layer_norm(x, {4}, w, b);
    sum(y).backward();
  }
  CHECK(packs == 5);
  CHECK(counter->count("aten::layer_norm") == 0);
  CHECK(counter->count("aten::native_layer_norm") == 1);
  CHECK(counter->count("aten::native_layer_norm_backward") == 1);
  REQUIRE(x.grad().defined());
  REQUIRE(w.grad().defined());
  REQUIRE(b.grad().defined());
  // The statistics do not require grad.
  auto [out, mean, rstd] = native_layer_norm(x, {4}, w, b, 1e-5);
  CHECK(out.requires_grad());
  CHECK_FALSE(mean.requires_grad());
  CHECK_FALSE(rstd.requires_grad());
  auto [rout, rrstd] = _fused_rms_norm(x, {4}, w, 1e-6);
  CHECK(rout.requires_grad());
  CHECK_FALSE(rrstd.requires_grad());
}

TEST_CASE("norm ops on Meta infer shapes and allocate nothing", "[layer_norm][rms_norm][meta]") {
  int64_t before = memory_allocated();
  Tensor x = meta_empty({2, 3, 4}, kBFloat16), w = meta_empty({3, 4}, kBFloat16), b = meta_empty({3, 4}, kBFloat16);
  auto [out, mean, rstd] = native_layer_norm(x, {3, 4}, w, b, 1e-5);
  CHECK(out.is_meta());
  CHECK(out.sizes() == Shape{2, 3, 4});
  CHECK(out.dtype() == kBFloat16);
  CHECK(mean.sizes() == Shape{2, 1, 1});
  CHECK(mean.dtype() == kBFloat16);  // what the CPU returns (a dry run counting like the CPU)
  CHECK(rstd.is_meta());
  {
    DryRun cuda_like(kCUDA);  // what the CUDA kernel returns
    CHECK(std::get<1>(native_layer_norm(x, {3, 4}, w, b, 1e-5)).dtype() == kFloat);
  }
  auto [dx, dw, db] = native_layer_norm_backward(out, x, {3, 4}, mean, rstd, w, b);
  CHECK(dx.sizes() == Shape{2, 3, 4});
  CHECK(dw.sizes() == Shape{3, 4});
  CHECK(db.dtype() == kBFloat16);
  CHECK(db.is_meta());
  auto [dx2, dw2, db2] = native_layer_norm_backward(out, x, {3, 4}, mean, rstd, Tensor(), Tensor());
  CHECK_FALSE(dw2.defined());
  CHECK_FALSE(db2.defined());
  CHECK(layer_norm(x, {4}).sizes() == Shape{2, 3, 4});
  auto [ro, rs] = _fused_rms_norm(x, {4}, meta_empty({4}, kFloat), 1e-6);
  CHECK(ro.dtype() == kBFloat16);
  CHECK(rs.sizes() == Shape{2, 3, 1});
  CHECK(rs.dtype() == kFloat);
  auto [rdx, rdw] = _fused_rms_norm_backward(ro, x, {4}, rs, meta_empty({4}, kFloat));
  CHECK(rdx.is_meta());
  CHECK(rdw.dtype() == kFloat);
  CHECK(rms_norm(x, {3, 4}).is_meta());
  CHECK(memory_allocated() == before);
}

TEST_CASE("norm errors name the op and the values", "[layer_norm][rms_norm][errors]") {
  Tensor x = ones({2, 3});
  REQUIRE_THROWS_WITH(layer_norm(x, {}),
                      Contains("aten::native_layer_norm: Expected normalized_shape to be at least 1-dimensional"));
  REQUIRE_THROWS_WITH(layer_norm(x, {4}),
                      Contains("aten::native_layer_norm: Given normalized_shape=[4], expected input "
                               "with shape [*, 4], but got input of size[2, 3]"));
  REQUIRE_THROWS_WITH(layer_norm(x, {2, 3, 1}), Contains("expected input with shape [*, 2, 3, 1]"));
  REQUIRE_THROWS_WITH(layer_norm(x, {3}, ones({2})),
                      Contains("aten::native_layer_norm: Expected weight to be of same shape as normalized_shape, but "
                               "got weight of shape [2] and normalized_shape = [3]"));
  REQUIRE_THROWS_WITH(layer_norm(x, {3}, Tensor(), ones({3, 1})),
                      Contains("Expected bias to be of same shape as normalized_shape, but got bias of shape [3, 1]"));
  REQUIRE_THROWS_WITH(
      layer_norm(x, {3}, ones({3}, kDouble)),
      Contains("aten::native_layer_norm: expected weight to have dtype Float (the input's; Float is also "
               "accepted for a BFloat16/Half input), but got Double"));
  REQUIRE_THROWS_WITH(
      layer_norm(ones({2, 3}, kLong), {3}),
      Contains("aten::native_layer_norm: expected 'input' to have a floating point dtype, but got Long"));
  REQUIRE_THROWS_WITH(layer_norm(x, {3}, ones({3}, TensorOptions().device(Device{kMeta}))),
                      Contains("aten::native_layer_norm: Expected all tensors to be on the same device"));

  auto [out, mean, rstd] = native_layer_norm(x, {3}, Tensor(), Tensor(), 1e-5);
  REQUIRE_THROWS_WITH(
      native_layer_norm_backward(ones({3, 2}), x, {3}, mean, rstd, Tensor(), Tensor()),
      Contains("aten::native_layer_norm_backward: grad_out of shape [3, 2] does not match input of shape [2, 3]"));
  REQUIRE_THROWS_WITH(native_layer_norm_backward(ones({2, 3}, kDouble), x, {3}, mean, rstd, Tensor(), Tensor()),
                      Contains("aten::native_layer_norm_backward: expected both arguments to have the same dtype, but "
                               "got Double and Float"));
  REQUIRE_THROWS_WITH(
      native_layer_norm_backward(ones({2, 3}), x, {3}, ones({3}), rstd, Tensor(), Tensor()),
      Contains("aten::native_layer_norm_backward: expected mean to have 2 elements (one per normalised row "
               "of the input), but got shape [3]"));
  REQUIRE_THROWS_WITH(native_layer_norm_backward(ones({2, 3}), x, {3}, mean, Tensor(), Tensor(), Tensor()),
                      Contains("aten::native_layer_norm_backward: argument 'rstd' is an undefined tensor"));
  REQUIRE_THROWS_WITH(native_layer_norm_backward(ones({2, 3}), x, {3}, mean, ones({2}, kLong), Tensor(), Tensor()),
                      Contains("aten::native_layer_norm_backward: expected 'rstd' to have a floating point dtype"));

  REQUIRE_THROWS_WITH(rms_norm(x, {2}),
                      Contains("aten::rms_norm: Given normalized_shape=[2], expected input with shape [*, 2]"));
  REQUIRE_THROWS_WITH(rms_norm(x, {3}, ones({4})),
                      Contains("aten::rms_norm: Expected weight to be of same shape as normalized_shape"));
  REQUIRE_THROWS_WITH(_fused_rms_norm(x, {2}, Tensor(), 1e-6),
                      Contains("aten::_fused_rms_norm: Given normalized_shape=[2], expected input with shape [*, 2]"));
  auto [rout, rrstd] = _fused_rms_norm(x, {3}, Tensor(), 1e-6);
  REQUIRE_THROWS_WITH(_fused_rms_norm_backward(ones({2, 3}), x, {3}, ones({5}), Tensor()),
                      Contains("aten::_fused_rms_norm_backward: expected rstd to have 2 elements"));
  REQUIRE_THROWS_WITH(
      _fused_rms_norm_backward(ones({2, 2}), x, {3}, rrstd, Tensor()),
      Contains("aten::_fused_rms_norm_backward: grad_out of shape [2, 2] does not match input of shape [2, 3]"));
  REQUIRE_THROWS_WITH(native_layer_norm_backward(Tensor(), x, {3}, mean, rstd, Tensor(), Tensor()),
                      Contains("aten::native_layer_norm_backward: argument 'grad_out' is an undefined tensor"));
  REQUIRE_THROWS_WITH(native_layer_norm_backward(ones({2, 3}), x, {3}, meta_empty({2, 1}), rstd, Tensor(), Tensor()),
                      Contains("aten::native_layer_norm_backward: Expected all tensors to be on the same device"));
  REQUIRE_THROWS_WITH(_fused_rms_norm_backward(meta_empty({2, 3}), x, {3}, rrstd, Tensor()),
                      Contains("aten::_fused_rms_norm_backward: Expected all tensors to be on the same device"));
}

TEST_CASE("rms_norm runs PyTorch 2.15's ops: the composite on the CPU, _fused_rms_norm counting like CUDA",
          "[rms_norm]") {
  // _fused_rms_norm has a kernel of its own on CUDA alone; elsewhere it is rms_norm_composite
  // (pow, mean, add_, rsqrt, mul, mul; a BFloat16 input upcast to Float and cast back).
  struct Order : DispatchMode {
    std::vector<std::string> ops;
    std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
      if (op.name() != "aten::detach") ops.push_back(op.name().substr(0, op.name().find('.')));
      return op.call(args);
    }
  };
  auto ops_of = [](const Tensor& x, const Tensor& w) {
    auto order = std::make_shared<Order>();
    DispatchModeGuard guard(order);
    rms_norm(x, {4}, w, 1e-5);
    return order->ops;
  };
  using S = std::vector<std::string>;
  const S composite{"aten::pow", "aten::mean", "aten::add_", "aten::rsqrt", "aten::mul", "aten::mul"};
  Tensor x = seeded_randn({2, 3, 4}, 81, kFloat).requires_grad_(true), w = ones({4}).requires_grad_(true);
  CHECK(ops_of(x, w) == composite);
  S bf16{"aten::_to_copy"};
  bf16.insert(bf16.end(), composite.begin(), composite.end());
  bf16.push_back("aten::_to_copy");
  CHECK(ops_of(x.detach().to(kBFloat16), w.detach().to(kBFloat16)) == bf16);
  // Meta counts like the CPU unless told to imitate CUDA.
  Tensor mx = meta_empty({2, 3, 4}, kFloat), mw = meta_empty({4}, kFloat);
  CHECK(ops_of(mx, mw) == composite);
  {
    DryRun cuda_like(kCUDA);
    CHECK(ops_of(mx, mw) == S{"aten::_fused_rms_norm"});
    // a weight of another dtype: PyTorch's "Can not dispatch to fused implementation"
    CHECK(ops_of(meta_empty({2, 3, 4}, kBFloat16), mw).front() == "aten::_to_copy");
  }
  // The composite's values and gradients are the fused op's, to rounding.
  Tensor xd = seeded_randn({3, 5}, 82, kDouble), wd = seeded_randn({5}, 83, kDouble);
  CHECK(all_close(rms_norm(xd, {5}, wd, 1e-6), std::get<0>(_fused_rms_norm(xd, {5}, wd, 1e-6)), 1e-12, 1e-12));
}
