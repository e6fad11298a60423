// Tests kernels/cpu/flash_attention.h directly, on raw strided arrays, against attention written
// out in double (softmax over whole rows, its backward by the chain rule): the block-by-block
// kernels with their online softmax must give the same output, log-sum-exp and gradients, causal
// or not, with more keys than one key block (so that rows are rescaled across blocks), and in a
// head-interleaved layout ([B, L, H, E], as a view of a qkv projection is).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/flash_attention.h"

namespace kc = remat::kernels::cpu;

namespace {

// A [B, H, rows, E] operand in one of two layouts: heads outer ([B, H, rows, E]) or interleaved
// ([B, rows, H, E]).
struct Operand {
  std::vector<float> data;
  kc::HeadStrides st;
  int64_t E;
  Operand(int64_t B, int64_t H, int64_t rows, int64_t E_, bool interleaved, std::mt19937* rng) : E(E_) {
    data.resize(static_cast<size_t>(B * H * rows * E));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : data) x = rng ? u(*rng) : 0.0f;
    st = interleaved ? kc::HeadStrides{rows * H * E, E, H * E} : kc::HeadStrides{H * rows * E, rows * E, E};
  }
  float& at(int64_t b, int64_t h, int64_t t, int64_t e) { return data[static_cast<size_t>(b * st.b + h * st.h + t * st.t + e)]; }
  double get(int64_t b, int64_t h, int64_t t, int64_t e) const {
    return data[static_cast<size_t>(b * st.b + h * st.h + t * st.t + e)];
  }
};

void check_against_double(const kc::AttentionSizes& n, bool causal, bool interleaved) {
  INFO("B " << n.B << " H " << n.H << " L " << n.L << " S " << n.S << " E " << n.E << " causal " << causal
            << " interleaved " << interleaved);
  std::mt19937 rng(7);
  Operand q(n.B, n.H, n.L, n.E, interleaved, &rng), k(n.B, n.H, n.S, n.E, interleaved, &rng),
      v(n.B, n.H, n.S, n.E, interleaved, &rng), dout(n.B, n.H, n.L, n.E, interleaved, &rng);
  Operand out(n.B, n.H, n.L, n.E, false, nullptr), dq(n.B, n.H, n.L, n.E, false, nullptr),
      dk(n.B, n.H, n.S, n.E, false, nullptr), dv(n.B, n.H, n.S, n.E, false, nullptr);
  std::vector<float> lse(static_cast<size_t>(n.B * n.H * n.L));
  const kc::HeadStrides lse_st{n.H * n.L, n.L, 1};
  const float scale = 1.0f / std::sqrt(static_cast<float>(n.E));

  kc::flash_attention_forward<float>(out.data.data(), out.st, lse.data(), lse_st, q.data.data(), q.st, k.data.data(),
                                     k.st, v.data.data(), v.st, n, causal, scale);
  kc::flash_attention_backward<float>(dq.data.data(), dq.st, dk.data.data(), dk.st, dv.data.data(), dv.st,
                                      dout.data.data(), dout.st, q.data.data(), q.st, k.data.data(), k.st,
                                      v.data.data(), v.st, out.data.data(), out.st, lse.data(), lse_st, n, causal,
                                      scale);

  // The reference, one (b, h) at a time: P = softmax(scale q k^T), out = P v; dP = dout v^T,
  // dS = P * (dP - rowsum(P * dP)), dq = scale dS k, dk = scale dS^T q, dv = P^T dout.
  double worst = 0;
  auto close = [&](double got, double want) { worst = std::max(worst, std::abs(got - want) / (1.0 + std::abs(want))); };
  for (int64_t b = 0; b < n.B; ++b) {
    for (int64_t h = 0; h < n.H; ++h) {
      std::vector<double> P(static_cast<size_t>(n.L * n.S), 0.0), dS(P.size(), 0.0);
      std::vector<double> dk_ref(static_cast<size_t>(n.S * n.E), 0.0), dv_ref(dk_ref.size(), 0.0);
      for (int64_t i = 0; i < n.L; ++i) {
        const int64_t keys = causal ? std::min(i + 1, n.S) : n.S;
        double m = -INFINITY;
        for (int64_t j = 0; j < keys; ++j) {
          double s = 0;
          for (int64_t e = 0; e < n.E; ++e) s += q.get(b, h, i, e) * k.get(b, h, j, e);
          P[i * n.S + j] = s * scale;
          m = std::max(m, P[i * n.S + j]);
        }
        double z = 0;
        for (int64_t j = 0; j < keys; ++j) z += (P[i * n.S + j] = std::exp(P[i * n.S + j] - m));
        for (int64_t j = 0; j < keys; ++j) P[i * n.S + j] /= z;
        close(lse[static_cast<size_t>(b * lse_st.b + h * lse_st.h + i)], m + std::log(z));
        double row = 0;
        for (int64_t j = 0; j < keys; ++j) {
          double dp = 0;
          for (int64_t e = 0; e < n.E; ++e) dp += dout.get(b, h, i, e) * v.get(b, h, j, e);
          dS[i * n.S + j] = dp;
          row += P[i * n.S + j] * dp;
        }
        for (int64_t j = 0; j < keys; ++j) dS[i * n.S + j] = P[i * n.S + j] * (dS[i * n.S + j] - row);
        for (int64_t e = 0; e < n.E; ++e) {
          double o = 0, g = 0;
          for (int64_t j = 0; j < keys; ++j) {
            o += P[i * n.S + j] * v.get(b, h, j, e);
            g += dS[i * n.S + j] * k.get(b, h, j, e) * scale;
            dv_ref[j * n.E + e] += P[i * n.S + j] * dout.get(b, h, i, e);
            dk_ref[j * n.E + e] += dS[i * n.S + j] * q.get(b, h, i, e) * scale;
          }
          close(out.get(b, h, i, e), o);
          close(dq.get(b, h, i, e), g);
        }
      }
      for (int64_t j = 0; j < n.S; ++j)
        for (int64_t e = 0; e < n.E; ++e) {
          close(dk.get(b, h, j, e), dk_ref[j * n.E + e]);
          close(dv.get(b, h, j, e), dv_ref[j * n.E + e]);
        }
    }
  }
  // float against double over sums of up to S terms of size ~1 (seen here: at most 2.4e-7).
  CHECK(worst < 2e-6);
}

}  // namespace

TEST_CASE("flash attention kernels: causal, one key block, both layouts", "[flash_attention]") {
  for (bool interleaved : {false, true}) check_against_double({2, 3, 70, 70, 16}, true, interleaved);
}

TEST_CASE("flash attention kernels: more keys than a key block (rows rescaled across blocks)", "[flash_attention]") {
  REQUIRE(kc::kFlashAttentionKeyBlock < 600);
  check_against_double({1, 2, 40, 600, 8}, false, true);
  check_against_double({1, 1, 600, 600, 8}, true, false);  // several query blocks, the diagonal in each
}

TEST_CASE("flash attention kernels: the query block is PyTorch's (256 from 768 queries, 64 from 192, else 32)", "[flash_attention]") {
  CHECK(kc::flash_attention_query_block(100) == 32);
  CHECK(kc::flash_attention_query_block(600) == 64);
  CHECK(kc::flash_attention_query_block(2000) == 256);
}
