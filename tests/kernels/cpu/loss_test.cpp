// Tests kernels/cpu/loss.h (ATen/native/LossNLL.cpp + SoftMax.cpp, fused): cross_entropy's forward
// loss and backward dlogits match the formulas in double at every tail length of the 16-lane row
// and every target lane; bfloat16 rows give the float kernel's results on their values (dlogits
// rounded once); -inf logits count as zero probability, a NaN makes its row's loss NaN; the bits do
// not depend on the thread count.
#include <catch2/catch.hpp>

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/cpu/loss.h"

namespace cpu = remat::kernels::cpu;
using remat::BFloat16;

namespace {

struct Logits {
  int64_t N, C;
  std::vector<float> x;
  std::vector<int64_t> targets;
};

// N rows of C logits spread over about [-8, 8]; row i's target walks every lane and the last class.
Logits make_logits(int64_t N, int64_t C) {
  Logits l{N, C, std::vector<float>(static_cast<size_t>(N * C)), std::vector<int64_t>(static_cast<size_t>(N))};
  for (int64_t k = 0; k < N * C; ++k) l.x[k] = 8.0f * std::sin(0.37f * static_cast<float>(k)) + 0.01f * (k % 13);
  for (int64_t i = 0; i < N; ++i) l.targets[i] = i == N - 1 ? C - 1 : (i * 7) % C;
  return l;
}

// The row's log-sum-exp in double.
double logsumexp(const float* x, int64_t C) {
  double mx = -INFINITY, s = 0;
  for (int64_t c = 0; c < C; ++c) mx = std::max(mx, double(x[c]));
  for (int64_t c = 0; c < C; ++c) s += std::exp(double(x[c]) - mx);
  return mx + std::log(s);
}

}  // namespace

TEST_CASE("cross_entropy's loss and dlogits match the formulas in double at every tail length and target lane",
          "[loss]") {
  for (int64_t C : {1, 15, 16, 17, 31, 63, 64, 65, 100, 4099}) {
    INFO("C = " << C);
    const int64_t N = 37;
    const Logits l = make_logits(N, C);
    double want_loss = 0;
    for (int64_t i = 0; i < N; ++i) want_loss += logsumexp(&l.x[i * C], C) - l.x[i * C + l.targets[i]];
    want_loss /= static_cast<double>(N);
    const double loss = cpu::cross_entropy_forward<float>(l.x.data(), l.targets.data(), N, C);
    CHECK(loss == Approx(want_loss).epsilon(1e-6).margin(1e-6));

    const double grad_loss = 1.7;
    std::vector<float> dx(static_cast<size_t>(N * C) + 5, -3.0f);
    cpu::cross_entropy_backward<float>(dx.data(), l.x.data(), l.targets.data(), grad_loss, N, C);
    int64_t wrong = 0;
    double worst = 0;
    for (int64_t i = 0; i < N; ++i) {
      const double lse = logsumexp(&l.x[i * C], C);
      for (int64_t c = 0; c < C; ++c) {
        const double p = std::exp(double(l.x[i * C + c]) - lse);
        const double want = (c == l.targets[i] ? p - 1.0 : p) * grad_loss / static_cast<double>(N);
        const double err = std::fabs(dx[i * C + c] - want);
        worst = std::max(worst, err / (1e-7 + std::fabs(want)));
        wrong += err > 4e-6 * std::fabs(want) + 1e-12;
      }
    }
    INFO("largest relative error " << worst);
    CHECK(wrong == 0);
    for (size_t k = static_cast<size_t>(N * C); k < dx.size(); ++k) CHECK(dx[k] == -3.0f);  // nothing past the end
  }
}

TEST_CASE("cross_entropy on bfloat16 logits is the float kernel on their values, dlogits rounded once", "[loss]") {
  for (int64_t C : {48, 37, 4096}) {  // whole vectors, a tail, the GPT's vocabulary
    INFO("C = " << C);
    const int64_t N = 20;
    const Logits l = make_logits(N, C);
    std::vector<BFloat16> xb(static_cast<size_t>(N * C)), dxb(static_cast<size_t>(N * C));
    std::vector<float> xf(static_cast<size_t>(N * C)), dxf(static_cast<size_t>(N * C));
    for (int64_t k = 0; k < N * C; ++k) {
      xb[k] = BFloat16(l.x[k]);
      xf[k] = float(xb[k]);
    }
    CHECK(cpu::cross_entropy_forward<BFloat16>(xb.data(), l.targets.data(), N, C) ==
          cpu::cross_entropy_forward<float>(xf.data(), l.targets.data(), N, C));
    cpu::cross_entropy_backward<float>(dxf.data(), xf.data(), l.targets.data(), 1.0, N, C);
    cpu::cross_entropy_backward<BFloat16>(dxb.data(), xb.data(), l.targets.data(), 1.0, N, C);
    int64_t wrong = 0;
    for (int64_t k = 0; k < N * C; ++k) wrong += dxb[k].bits != BFloat16(dxf[k]).bits;
    CHECK(wrong == 0);
  }
}

TEST_CASE("cross_entropy: -inf logits have probability 0, a NaN logit makes its row's loss NaN", "[loss]") {
  const int64_t C = 40;
  std::vector<float> x(2 * C);
  for (int64_t c = 0; c < C; ++c) x[c] = x[C + c] = c < 20 ? 0.5f : -INFINITY;  // half of each row masked
  std::vector<int64_t> targets = {3, 19};
  // 20 equal logits: each probability 1/20, loss log(20)
  CHECK(cpu::cross_entropy_forward<float>(x.data(), targets.data(), 2, C) == Approx(std::log(20.0)).epsilon(1e-6));
  std::vector<float> dx(2 * C);
  cpu::cross_entropy_backward<float>(dx.data(), x.data(), targets.data(), 2.0, 2, C);
  for (int64_t c = 0; c < C; ++c) {
    INFO("c = " << c);
    const double p = c < 20 ? 0.05 : 0.0;
    CHECK(dx[c] == Approx(c == 3 ? p - 1.0 : p).margin(1e-7));
    CHECK(dx[C + c] == Approx(c == 19 ? p - 1.0 : p).margin(1e-7));
  }
  x[C + 33] = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(cpu::cross_entropy_forward<float>(x.data(), targets.data(), 2, C)));
}

TEST_CASE("cross_entropy gives the same bits on one thread and on two", "[loss]") {
  const int64_t N = 300, C = 1031;
  const Logits l = make_logits(N, C);
  auto run = [&](int threads) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    std::vector<float> dx(static_cast<size_t>(N * C));
    const double loss = cpu::cross_entropy_forward<float>(l.x.data(), l.targets.data(), N, C);
    cpu::cross_entropy_backward<float>(dx.data(), l.x.data(), l.targets.data(), 1.0, N, C);
    omp_set_num_threads(before);
    dx.push_back(static_cast<float>(loss));
    return dx;
  };
  CHECK(run(1) == run(2));
}
