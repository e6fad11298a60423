// Tests kernels/cpu/norm.h (ATen/native/cpu/layer_norm_kernel.cpp): layer_norm's backward sums its
// parameter gradients in row chunks while each row is in L1; the sums match double-precision ones,
// do not depend on the thread count, and bf16 rows give the float kernel's result on their values;
// dx matches the formula in double at every tail length of the 16-lane row. The forward likewise:
// mean, rstd and y against double at every tail length, bf16 rows as the float kernel's rounded; its
// rows two at a time in registers (AMD) give each row the bits it gets alone.
#include <catch2/catch.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/norm.h"

namespace cpu = remat::kernels::cpu;
using remat::BFloat16;

namespace {

struct Case {
  int64_t M, N;
  std::vector<float> x, dy, w, mean, rstd;
};

Case make_case(int64_t M, int64_t N) {
  Case c{M, N, std::vector<float>(M * N), std::vector<float>(M * N), std::vector<float>(N), std::vector<float>(M),
         std::vector<float>(M)};
  for (int64_t k = 0; k < M * N; ++k) {
    c.x[k] = std::sin(0.1f * k) + 0.01f * (k % 7);
    c.dy[k] = std::cos(0.07f * k);
  }
  for (int64_t j = 0; j < N; ++j) c.w[j] = 0.5f + 0.01f * j;
  for (int64_t i = 0; i < M; ++i) {
    double s = 0, sq = 0;
    for (int64_t j = 0; j < N; ++j) s += c.x[i * N + j];
    const double mu = s / N;
    for (int64_t j = 0; j < N; ++j) sq += (c.x[i * N + j] - mu) * (c.x[i * N + j] - mu);
    c.mean[i] = static_cast<float>(mu);
    c.rstd[i] = static_cast<float>(1.0 / std::sqrt(sq / N + 1e-5));
  }
  return c;
}

// dweight and dbias against sums in double over every row.
void check_param_grads(const Case& c, const std::vector<float>& dw, const std::vector<float>& db) {
  const int64_t M = c.M, N = c.N;
  for (int64_t j = 0; j < N; ++j) {
    double want_w = 0, want_b = 0;
    for (int64_t i = 0; i < M; ++i) {
      want_w += double(c.dy[i * N + j]) * ((double(c.x[i * N + j]) - c.mean[i]) * c.rstd[i]);
      want_b += c.dy[i * N + j];
    }
    CHECK(dw[j] == Approx(want_w).margin(1e-4));
    CHECK(db[j] == Approx(want_b).margin(1e-4));
  }
}

}  // namespace

TEST_CASE("layer_norm_backward's dweight and dbias match double sums over every row, across row chunks",
          "[norm]") {
  for (int64_t M : {1, 63, 64, 65, 200}) {
    INFO("M = " << M);
    const int64_t N = 40;
    Case c = make_case(M, N);
    std::vector<float> dx(M * N), dw(N, -1.0f), db(N, -1.0f);
    cpu::layer_norm_backward<float>(dx.data(), dw.data(), db.data(), c.dy.data(), c.x.data(), c.mean.data(),
                                    c.rstd.data(), c.w.data(), M, N);
    check_param_grads(c, dw, db);
  }
}

TEST_CASE("layer_norm_backward gives the same bits on one thread and on two", "[norm]") {
  const int64_t M = 300, N = 96;
  Case c = make_case(M, N);
  auto run = [&](int threads) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    std::vector<float> out(M * N + 2 * N);
    cpu::layer_norm_backward<float>(out.data(), out.data() + M * N, out.data() + M * N + N, c.dy.data(), c.x.data(),
                                    c.mean.data(), c.rstd.data(), c.w.data(), M, N);
    omp_set_num_threads(before);
    return out;
  };
  CHECK(run(1) == run(2));
}

TEST_CASE("layer_norm_backward on bfloat16 rows is the float kernel on their values, dx rounded once", "[norm]") {
  for (int64_t N : {48, 37}) {  // whole vectors, and a tail
    INFO("N " << N);
    const int64_t M = 70;
    Case c = make_case(M, N);
    std::vector<BFloat16> xb(M * N), dyb(M * N), dxb(M * N);
    std::vector<float> xf(M * N), dyf(M * N);
    for (int64_t k = 0; k < M * N; ++k) {
      xb[k] = BFloat16(c.x[k]);
      dyb[k] = BFloat16(c.dy[k]);
      xf[k] = float(xb[k]);
      dyf[k] = float(dyb[k]);
    }
    std::vector<float> dxf(M * N), dwf(N), dbf(N), dwb(N), dbb(N);
    cpu::layer_norm_backward<float>(dxf.data(), dwf.data(), dbf.data(), dyf.data(), xf.data(), c.mean.data(),
                                    c.rstd.data(), c.w.data(), M, N);
    cpu::layer_norm_backward<BFloat16>(dxb.data(), dwb.data(), dbb.data(), dyb.data(), xb.data(), c.mean.data(),
                                       c.rstd.data(), c.w.data(), M, N);
    int64_t wrong = 0;
    for (int64_t k = 0; k < M * N; ++k) wrong += dxb[k].bits != BFloat16(dxf[k]).bits;
    CHECK(wrong == 0);
    CHECK(dwb == dwf);
    CHECK(dbb == dbf);
  }
}

TEST_CASE("layer_norm_backward's dx matches the formula in double, with and without weight, at every tail length",
          "[norm]") {
  // rows of whole 16-lane vectors, a tail, only a tail; dweight and dbias wanted or not
  for (int64_t N : {1, 15, 16, 17, 40, 1024, 1031}) {
    for (bool affine : {true, false}) {
      for (bool grads : {true, false}) {
        INFO("N = " << N << (affine ? ", weight" : ", no weight") << (grads ? ", parameter gradients" : ""));
        const int64_t M = 5;
        Case c = make_case(M, N);
        std::vector<float> dx(M * N, -1.0f), dw(N, -1.0f), db(N, -1.0f);
        cpu::layer_norm_backward<float>(dx.data(), grads ? dw.data() : nullptr, grads ? db.data() : nullptr,
                                        c.dy.data(), c.x.data(), c.mean.data(), c.rstd.data(),
                                        affine ? c.w.data() : nullptr, M, N);
        int64_t wrong = 0;
        double worst = 0;
        for (int64_t i = 0; i < M; ++i) {
          double sum_g = 0, sum_gx = 0;
          auto gw = [&](int64_t j) { return double(c.dy[i * N + j]) * (affine ? double(c.w[j]) : 1.0); };
          auto xhat = [&](int64_t j) { return (double(c.x[i * N + j]) - c.mean[i]) * c.rstd[i]; };
          for (int64_t j = 0; j < N; ++j) sum_g += gw(j), sum_gx += gw(j) * xhat(j);
          for (int64_t j = 0; j < N; ++j) {
            const double want = c.rstd[i] * (gw(j) - sum_g / N - xhat(j) * sum_gx / N);
            const double err = std::fabs(dx[i * N + j] - want);
            worst = std::max(worst, err);
            wrong += err > 1e-4 * (1.0 + std::fabs(want));
          }
        }
        INFO("largest error " << worst);
        CHECK(wrong == 0);
        if (grads) check_param_grads(c, dw, db);
      }
    }
  }
}

TEST_CASE("layer_norm_forward's mean, rstd and y match the formula in double, with and without weight and bias, at "
          "every tail length",
          "[norm]") {
  // rows of whole 16-lane vectors (and whole groups of four), a tail, only a tail
  for (int64_t N : {1, 15, 16, 17, 40, 64, 100, 1024, 1031}) {
    for (bool weight : {true, false}) {
      for (bool bias : {true, false}) {
        INFO("N = " << N << (weight ? ", weight" : "") << (bias ? ", bias" : ""));
        const int64_t M = 5;
        Case c = make_case(M, N);
        std::vector<float> b(N);
        for (int64_t j = 0; j < N; ++j) b[j] = 0.25f - 0.003f * j;
        std::vector<float> y(M * N + 7, -1.0f), mean(M), rstd(M);
        cpu::layer_norm_forward<float>(y.data(), mean.data(), rstd.data(), c.x.data(), weight ? c.w.data() : nullptr,
                                       bias ? b.data() : nullptr, M, N, 1e-5);
        int64_t wrong = 0;
        double worst = 0;
        for (int64_t i = 0; i < M; ++i) {
          CHECK(mean[i] == Approx(c.mean[i]).margin(1e-6));
          CHECK(rstd[i] == Approx(c.rstd[i]).epsilon(1e-5));
          for (int64_t j = 0; j < N; ++j) {
            const double want = (double(c.x[i * N + j]) - c.mean[i]) * c.rstd[i] * (weight ? double(c.w[j]) : 1.0) +
                                (bias ? double(b[j]) : 0.0);
            const double err = std::fabs(y[i * N + j] - want);
            worst = std::max(worst, err);
            wrong += err > 1e-4 * (1.0 + std::fabs(want));
          }
        }
        INFO("largest error " << worst);
        CHECK(wrong == 0);
        CHECK(std::count(y.begin() + M * N, y.end(), -1.0f) == 7);  // nothing past the last row
      }
    }
  }
}

TEST_CASE("layer_norm_forward on bfloat16 rows is the float kernel on their values, y rounded once", "[norm]") {
  for (int64_t N : {48, 37, 1024}) {  // whole vectors, a tail, the GPT's width
    INFO("N " << N);
    const int64_t M = 70;
    Case c = make_case(M, N);
    std::vector<BFloat16> xb(M * N), yb(M * N);
    std::vector<float> xf(M * N), yf(M * N), b(N), mean_f(M), rstd_f(M), mean_b(M), rstd_b(M);
    for (int64_t k = 0; k < M * N; ++k) {
      xb[k] = BFloat16(c.x[k] * 3.0f - 1.0f);
      xf[k] = float(xb[k]);
    }
    for (int64_t j = 0; j < N; ++j) b[j] = 0.25f - 0.003f * j;
    cpu::layer_norm_forward<float>(yf.data(), mean_f.data(), rstd_f.data(), xf.data(), c.w.data(), b.data(), M, N,
                                   1e-5);
    cpu::layer_norm_forward<BFloat16>(yb.data(), mean_b.data(), rstd_b.data(), xb.data(), c.w.data(), b.data(), M, N,
                                      1e-5);
    int64_t wrong = 0;
    for (int64_t k = 0; k < M * N; ++k) wrong += yb[k].bits != BFloat16(yf[k]).bits;
    CHECK(wrong == 0);
    CHECK(mean_b == mean_f);
    CHECK(rstd_b == rstd_f);
  }
}

TEST_CASE("layer_norm_forward gives the same bits on one thread and on two", "[norm]") {
  const int64_t M = 300, N = 1031;
  Case c = make_case(M, N);
  auto run = [&](int threads) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    std::vector<float> y(M * N), mean(M), rstd(M);
    const float* no_bias = nullptr;
    cpu::layer_norm_forward<float>(y.data(), mean.data(), rstd.data(), c.x.data(), c.w.data(), no_bias, M, N, 1e-5);
    omp_set_num_threads(before);
    y.insert(y.end(), mean.begin(), mean.end());
    y.insert(y.end(), rstd.begin(), rstd.end());
    return y;
  };
  CHECK(run(1) == run(2));
}

#if defined(__AVX512F__)
TEST_CASE("layer_norm_forward's rows two at a time in registers: each row the bits it gets alone, and the formula "
          "in double (run on every AVX-512 build, whichever machine layer_norm_forward gives them to)",
          "[norm]") {
  for (int64_t N : {1, 15, 16, 17, 40, 256, 1031}) {
    for (bool weight : {true, false}) {
      for (bool bias : {true, false}) {
        INFO("N = " << N << (weight ? ", weight" : "") << (bias ? ", bias" : ""));
        const int64_t M = 7;  // three pairs and a row alone
        Case c = make_case(M, N);
        std::vector<float> b(N);
        for (int64_t j = 0; j < N; ++j) b[j] = 0.25f - 0.003f * j;
        const float* w = weight ? c.w.data() : nullptr;
        const float* bb = bias ? b.data() : nullptr;
        std::vector<float> y(M * N + 7, -1.0f), mean(M), rstd(M);
        cpu::detail::layer_norm_forward_avx512(y.data(), mean.data(), rstd.data(), c.x.data(), w, bb, M, N, 1e-5f);
        int64_t differ = 0, wrong = 0;
        for (int64_t i = 0; i < M; ++i) {
          std::vector<float> alone(N);
          float mean1 = 0, rstd1 = 0;
          cpu::detail::layer_norm_forward_rows_avx512<1>(alone.data(), &mean1, &rstd1, c.x.data() + i * N, w, bb, N,
                                                         1e-5f);
          differ += std::memcmp(alone.data(), y.data() + i * N, N * sizeof(float)) != 0;
          differ += mean1 != mean[i] || rstd1 != rstd[i];
          CHECK(mean[i] == Approx(c.mean[i]).margin(1e-6));
          CHECK(rstd[i] == Approx(c.rstd[i]).epsilon(1e-5));
          for (int64_t j = 0; j < N; ++j) {
            const double want = (double(c.x[i * N + j]) - c.mean[i]) * c.rstd[i] * (weight ? double(c.w[j]) : 1.0) +
                                (bias ? double(b[j]) : 0.0);
            wrong += std::fabs(y[i * N + j] - want) > 1e-4 * (1.0 + std::fabs(want));
          }
        }
        CHECK(differ == 0);
        CHECK(wrong == 0);
        CHECK(std::count(y.begin() + M * N, y.end(), -1.0f) == 7);  // nothing past the last row
      }
    }
  }
}

TEST_CASE("layer_norm_forward takes the row pairs on AMD from family 0x19 on, and then gives their bits", "[norm]") {
  // The machine rule restated rather than called: AMD Zen 4 and later (measured there), not the Xeon.
  CHECK(cpu::detail::layer_norm_forward_in_row_pairs() == (cpu::amd_family() >= 0x19));
  const int64_t M = 9, N = 100;
  Case c = make_case(M, N);
  std::vector<float> y(M * N), mean(M), rstd(M), y2(M * N), mean2(M), rstd2(M);
  const float* no_bias = nullptr;
  cpu::layer_norm_forward<float>(y.data(), mean.data(), rstd.data(), c.x.data(), c.w.data(), no_bias, M, N, 1e-5);
  cpu::detail::layer_norm_forward_avx512(y2.data(), mean2.data(), rstd2.data(), c.x.data(), c.w.data(), no_bias, M, N,
                                         1e-5f);
  if (cpu::detail::layer_norm_forward_in_row_pairs()) {
    CHECK(y == y2);
    CHECK(mean == mean2);
    CHECK(rstd == rstd2);
  } else {
    SUCCEED("the Eigen form on this machine: its own tests above");
  }
}
#endif
