// Tests ops/cuda/normalization.cpp: native_layer_norm and _fused_rms_norm on CUDA, forward
// (output and statistics) and backward (input, weight and bias gradients), against a float64
// host reference and against the CPU op (forward and backward through autograd); warp-per-row
// (<= 1024 columns) and block-per-row kernels, rows of 1, about 32, about 1024 and 4097 columns,
// strided, broadcast and empty inputs, every floating dtype; gradcheck.
#include <catch2/catch.hpp>

#include <cmath>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/cuda_op_check.h"

using namespace remat;
using namespace remat::testing;

namespace {

struct NormRef {
  std::vector<double> y, mean, rstd, dx, dw, db;
};

// rows x cols, optional weight/bias (empty vectors: none); rms: RMSNorm.
NormRef norm_ref(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                 const std::vector<double>& dy, int64_t rows, int64_t cols, double eps, bool rms) {
  NormRef r;
  r.y.resize(x.size());
  r.dx.resize(x.size());
  r.dw.assign(static_cast<size_t>(cols), 0.0);
  r.db.assign(static_cast<size_t>(cols), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    const double* xr = &x[static_cast<size_t>(i * cols)];
    double mean = 0, var = 0;
    if (!rms) {
      for (int64_t j = 0; j < cols; ++j) mean += xr[j];
      mean /= static_cast<double>(cols);
    }
    for (int64_t j = 0; j < cols; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= static_cast<double>(cols);
    const double rstd = 1.0 / std::sqrt(var + eps);
    r.mean.push_back(mean);
    r.rstd.push_back(rstd);
    double sum_g = 0, sum_gx = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double xhat = (xr[j] - mean) * rstd, wj = w.empty() ? 1.0 : w[j];
      r.y[static_cast<size_t>(i * cols + j)] = xhat * wj + (b.empty() ? 0.0 : b[j]);
      const double g = dy[static_cast<size_t>(i * cols + j)] * wj;
      sum_g += g;
      sum_gx += g * xhat;
      r.dw[static_cast<size_t>(j)] += dy[static_cast<size_t>(i * cols + j)] * xhat;
      r.db[static_cast<size_t>(j)] += dy[static_cast<size_t>(i * cols + j)];
    }
    for (int64_t j = 0; j < cols; ++j) {
      const double xhat = (xr[j] - mean) * rstd, wj = w.empty() ? 1.0 : w[j];
      const double g = dy[static_cast<size_t>(i * cols + j)] * wj;
      r.dx[static_cast<size_t>(i * cols + j)] =
          rstd * (g - (rms ? 0.0 : sum_g / static_cast<double>(cols)) - xhat * sum_gx / static_cast<double>(cols));
    }
  }
  return r;
}

}  // namespace

TEST_CASE("native_layer_norm and its backward on CUDA match a float64 reference", "[normalization][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const double eps = 1e-5;
  uint64_t seed = 1;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{64, 96}, {7, 768}, {5, 3000}, {3, 1}}) {
      for (bool affine : {true, false}) {
        Tensor x = add(mul(random_cpu({rows, cols}, kDouble, ++seed), 2.0), 0.5).to(dt);
        Tensor w = random_cpu({cols}, kDouble, ++seed).to(dt), b = random_cpu({cols}, kDouble, ++seed).to(dt);
        Tensor dy = random_cpu({rows, cols}, kDouble, ++seed).to(dt);
        NormRef r = norm_ref(x.to_vector(), affine ? w.to_vector() : std::vector<double>{},
                             affine ? b.to_vector() : std::vector<double>{}, dy.to_vector(), rows, cols, eps, false);
        Tensor gw = affine ? w.to(cuda0()) : Tensor(), gb = affine ? b.to(cuda0()) : Tensor();
        auto [y, mean, rstd] = native_layer_norm(x.to(cuda0()), {cols}, gw, gb, eps);
        INFO(toString(dt) << " " << rows << "x" << cols << " affine " << affine);
        CHECK(mean.sizes() == Shape{rows, 1});
        CHECK(mean.dtype() == (dt == kDouble ? kDouble : kFloat));
        const Tolerance tol = reduction_tolerance(dt);
        CHECK(compare(y.to_vector(), r.y, tol) == "");
        CHECK(compare(mean.to_vector(), r.mean, tol) == "");
        CHECK(compare(rstd.to_vector(), r.rstd, tol) == "");
        auto [dx, dw, db] = native_layer_norm_backward(dy.to(cuda0()), x.to(cuda0()), {cols}, mean, rstd, gw, gb);
        CHECK(compare(dx.to_vector(), r.dx, tol) == "");
        CHECK(dw.defined() == affine);
        CHECK(db.defined() == affine);
        if (affine) {
          CHECK(compare(dw.to_vector(), r.dw, tol) == "");
          CHECK(compare(db.to_vector(), r.db, tol) == "");
        }
      }
    }
  }
  auto opt = TensorOptions().device(cuda0());
  REQUIRE_THROWS_WITH(native_layer_norm(zeros({2, 3}, opt), {4}, Tensor(), Tensor(), 1e-5),
                      Catch::Contains("Given normalized_shape=[4], expected input with shape [*, 4]"));
  REQUIRE_THROWS_WITH(native_layer_norm(zeros({2, 3}, opt), {3}, zeros({2}, opt), Tensor(), 1e-5),
                      Catch::Contains("Expected weight to be of same shape as normalized_shape"));
}

TEST_CASE("_fused_rms_norm and its backward on CUDA match a float64 reference", "[normalization][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const double eps = 1e-6;
  uint64_t seed = 100;
  for (ScalarType dt : {kFloat, kDouble, kBFloat16}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{64, 96}, {4, 2048}}) {
      Tensor x = random_cpu({2, rows / 2, cols}, kDouble, ++seed).to(dt);
      Tensor w = random_cpu({cols}, kDouble, ++seed).to(dt);
      Tensor dy = random_cpu({2, rows / 2, cols}, kDouble, ++seed).to(dt);
      NormRef r = norm_ref(x.to_vector(), w.to_vector(), {}, dy.to_vector(), rows, cols, eps, true);
      auto [y, rstd] = _fused_rms_norm(x.to(cuda0()), {cols}, w.to(cuda0()), eps);
      INFO(toString(dt) << " " << rows << "x" << cols);
      CHECK(rstd.sizes() == Shape{2, rows / 2, 1});
      const Tolerance tol = reduction_tolerance(dt);
      CHECK(compare(y.to_vector(), r.y, tol) == "");
      CHECK(compare(rstd.to_vector(), r.rstd, tol) == "");
      auto [dx, dw] = _fused_rms_norm_backward(dy.to(cuda0()), x.to(cuda0()), {cols}, rstd, w.to(cuda0()));
      CHECK(compare(dx.to_vector(), r.dx, tol) == "");
      CHECK(compare(dw.to_vector(), r.dw, tol) == "");
    }
  }
}

TEST_CASE("layer and RMS norm on CUDA match the CPU kernels, with Float weights for a BFloat16 input",
          "[normalization][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = random_cpu({6, 40}, kBFloat16, 31), dy = random_cpu({6, 40}, kBFloat16, 32);
  Tensor w = random_cpu({40}, kFloat, 33), b = random_cpu({40}, kFloat, 34);
  auto [y, mean, rstd] = native_layer_norm(x, {40}, w, b, 1e-5);
  auto [gy, gmean, grstd] = native_layer_norm(x.to(cuda0()), {40}, w.to(cuda0()), b.to(cuda0()), 1e-5);
  CHECK(compare(gy, y, kBF16) == "");
  CHECK(compare(gmean, mean, kF32Reduction) == "");
  CHECK(compare(grstd, rstd, kF32Reduction) == "");
  auto [dx, dw, db] = native_layer_norm_backward(dy, x, {40}, mean, rstd, w, b);
  auto [gdx, gdw, gdb] =
      native_layer_norm_backward(dy.to(cuda0()), x.to(cuda0()), {40}, gmean, grstd, w.to(cuda0()), b.to(cuda0()));
  CHECK(gdw.dtype() == kFloat);  // the parameter's dtype
  CHECK(compare(gdx, dx, kBF16) == "");
  CHECK(compare(gdw, dw, kF32Reduction) == "");
  CHECK(compare(gdb, db, kF32Reduction) == "");
  auto [ry, rr] = _fused_rms_norm(x, {40}, w, 1e-6);
  auto [gry, grr] = _fused_rms_norm(x.to(cuda0()), {40}, w.to(cuda0()), 1e-6);
  CHECK(compare(gry, ry, kBF16) == "");
  CHECK(compare(grr, rr, kF32Reduction) == "");
}

TEST_CASE("gradcheck in float64 on CUDA for layer_norm and rms_norm", "[normalization][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor x = random_cpu({3, 5}, kDouble, 7).to(cuda0()).requires_grad_();
  Tensor w = random_cpu({5}, kDouble, 8).to(cuda0()).requires_grad_();
  Tensor b = random_cpu({5}, kDouble, 9).to(cuda0()).requires_grad_();
  CHECK(autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{layer_norm(in[0], {5}, in[1], in[2])}; },
      {x, w, b}));
  CHECK(autograd::gradcheck(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{rms_norm(in[0], {5}, in[1])}; }, {x, w}));
}

namespace {
// The normalisation shapes: row_shapes() but rows of one element, a 3-d input over its last
// dim, and 1000 rows (the weight and bias gradients sum over 32 chunks of rows).
std::vector<Shape> norm_shapes() {
  std::vector<Shape> v;
  for (const Shape& s : row_shapes())
    if (s[1] != 1) v.push_back(s);
  v.push_back({2, 3, 33});
  v.push_back({1000, 31});
  return v;
}
// Rows of one element: the input's gradient is 0 (layer_norm) or eps / (x^2 + eps) times the
// upstream one (rms_norm), each computed as a difference of two nearly equal terms scaled by an
// rstd of up to 1/sqrt(eps): rounding noise of order 1e-5 on either device is all there is to
// compare. These shapes are checked forward only.
const std::vector<Shape> kOneColumn = {{1, 1}, {33, 1}};
// More rows than the grid's blocks hold at once (a grid-stride loop over rows): every thread is
// emulated, so one dtype and layout. The input's gradient only: the weight's would be a sum of
// 17000 terms that cancel, compared at a float32 tolerance.
const Case kManyRows{kFloat, {17000, 31}, Layout::Contiguous};
}  // namespace

TEST_CASE("layer_norm on CUDA matches the CPU, forward and backward, on every row length and layout",
          "[normalization][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  auto fn = [](bool affine) {
    return [affine](const std::vector<Tensor>& in) {
      const Shape ns = {in[0].sizes().back()};
      // all three outputs: y, mean and rstd; the statistics compared in float (PyTorch's CPU kernel
      // returns a 16-bit input's in its dtype, the CUDA kernel in float: tests/ops/normalization_test.cpp)
      auto [y, mean, rstd] = native_layer_norm(in[0], ns, affine ? in[1] : Tensor(), affine ? in[2] : Tensor(), 1e-5);
      return std::vector<Tensor>{y, mean.to(kFloat), rstd.to(kFloat)};
    };
  };
  auto args = [](const Case& c) {
    return std::vector<Arg>{arg(c.shape, -2, 3).in(c.layout), arg({c.shape.back()}), arg({c.shape.back()})};
  };
  // A 16-bit input's statistics differ by device (the CPU rounds them to the input's dtype, as
  // PyTorch's CPU kernel; CUDA keeps them in float), and each device's backward reads its own: the
  // autograd check runs for float and double; for 16-bit inputs the forward here, and the backward
  // kernels below, given the same statistics.
  const std::vector<ScalarType> wide = {kFloat, kDouble}, narrow = {kBFloat16, kHalf};
  for (bool affine : {true, false}) {
    const char* name = affine ? "layer_norm affine" : "layer_norm";
    check_cases(name, fn(affine), cases(wide, norm_shapes()), args, Kind::Reduction);
    check_cases(name, fn(affine), cases(narrow, norm_shapes()), args, Kind::Reduction, /*backward=*/false);
    check_cases(name, fn(affine), cases(floating_types(), kOneColumn), args, Kind::Reduction, /*backward=*/false);
    check_cases(
        name, fn(affine), {kManyRows},
        [](const Case& c) {
          return std::vector<Arg>{arg(c.shape, -2, 3), arg({c.shape.back()}).no_grad(), arg({c.shape.back()}).no_grad()};
        },
        Kind::Reduction);
  }
  // The backward kernels of a 16-bit input, given the same statistics (the CPU's, in the input's dtype).
  auto backward_given_stats = [](bool affine) {
    return [affine](const std::vector<Tensor>& in) {
      const Shape ns = {in[0].sizes().back()};
      const Tensor w = affine ? in[1] : Tensor(), b = affine ? in[2] : Tensor();
      auto [y, mean, rstd] = native_layer_norm(in[0].to(Device{kCPU}), ns, w.defined() ? w.to(Device{kCPU}) : w,
                                               b.defined() ? b.to(Device{kCPU}) : b, 1e-5);
      auto [dx, dw, db] =
          native_layer_norm_backward(in[3], in[0], ns, mean.to(in[0].device()), rstd.to(in[0].device()), w, b);
      return affine ? std::vector<Tensor>{dx, dw, db} : std::vector<Tensor>{dx};
    };
  };
  for (bool affine : {true, false}) {
    check_cases(affine ? "layer_norm_backward affine, the same statistics" : "layer_norm_backward, the same statistics",
                backward_given_stats(affine), cases(narrow, norm_shapes()),
                [](const Case& c) {
                  return std::vector<Arg>{arg(c.shape, -2, 3).in(c.layout).no_grad(), arg({c.shape.back()}).no_grad(),
                                          arg({c.shape.back()}).no_grad(), arg(c.shape).no_grad()};
                },
                Kind::Reduction, /*backward=*/false);
  }
  // Over the last two dims (16-bit: forward only, as above).
  for (const std::vector<ScalarType>* dtypes : {&wide, &narrow}) {
    check_cases(
        "layer_norm over two dims",
        [](const std::vector<Tensor>& in) { return layer_norm(in[0], {in[0].size(1), in[0].size(2)}, in[1], in[2]); },
        cases(*dtypes, {{3, 5, 7}, {2, 33, 31}}),
        [](const Case& c) {
          return std::vector<Arg>{arg(c.shape).in(c.layout), arg({c.shape[1], c.shape[2]}), arg({c.shape[1], c.shape[2]})};
        },
        Kind::Reduction, /*backward=*/dtypes == &wide);
  }
  // Float weights for 16-bit inputs.
  for (ScalarType dt : {kBFloat16, kHalf}) {
    check_cases(
        "layer_norm with Float weights",
        [](const std::vector<Tensor>& in) { return layer_norm(in[0], {in[0].sizes().back()}, in[1], in[2]); },
        cases({dt}, {{7, 31}, {5, 1025}}),
        [](const Case& c) {
          return std::vector<Arg>{arg(c.shape).in(c.layout), arg({c.shape.back()}).of(kFloat),
                                  arg({c.shape.back()}).of(kFloat)};
        },
        Kind::Reduction);
  }
}

TEST_CASE("rms_norm on CUDA matches the CPU, forward and backward, on every row length and layout",
          "[normalization][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  auto fn = [](bool affine) {
    return [affine](const std::vector<Tensor>& in) {
      auto [y, rstd] = _fused_rms_norm(in[0], {in[0].sizes().back()}, affine ? in[1] : Tensor(), 1e-6);
      return std::vector<Tensor>{y, rstd};
    };
  };
  auto args = [](const Case& c) { return std::vector<Arg>{arg(c.shape, -2, 3).in(c.layout), arg({c.shape.back()})}; };
  for (bool affine : {true, false}) {
    const char* name = affine ? "rms_norm affine" : "rms_norm";
    check_cases(name, fn(affine), cases(floating_types(), norm_shapes()), args, Kind::Reduction);
    check_cases(name, fn(affine), cases(floating_types(), kOneColumn), args, Kind::Reduction, /*backward=*/false);
    check_cases(
        name, fn(affine), {kManyRows},
        [](const Case& c) { return std::vector<Arg>{arg(c.shape, -2, 3), arg({c.shape.back()}).no_grad()}; },
        Kind::Reduction);
  }
}
