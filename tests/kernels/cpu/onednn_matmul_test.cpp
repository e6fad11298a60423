// Tests kernels/cpu/onednn_matmul.cpp: what oneDNN accepts and declines (a broadcast batch, an
// operand without a unit stride, bf16 on a CPU without bf16 instructions), that an accepted
// problem is computed (against the OpenBLAS/Eigen loop) and that its primitive is reused, that
// products of different sizes share each thread's scratchpad correctly, and the error messages.
// Without oneDNN (--config=no_onednn) it declines everything.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/error.h"
#include "kernels/cpu/onednn_matmul.h"

namespace onednn = remat::kernels::cpu::onednn;
using remat::BFloat16;
using remat::kernels::cpu::StridedGemm;
using Catch::Contains;

namespace {

StridedGemm plain(int64_t m, int64_t n, int64_t k) {
  StridedGemm p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = {k, 1};
  p.b = {n, 1};
  p.c = {n, 1};
  return p;
}

}  // namespace

TEST_CASE("oneDNN matmul: runs a float product, or declines when built without oneDNN", "[onednn]") {
  const StridedGemm p = plain(3, 4, 5);
  std::vector<float> a(15), b(20), c(12, -1.0f), bias = {1, 2, 3, 4};
  for (size_t i = 0; i < a.size(); ++i) a[i] = 0.5f * float(i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = 1.0f - 0.25f * float(i);
  const bool ran = onednn::matmul(onednn::DataType::Float, p, 1.0f, a.data(), b.data(), 0.0f, c.data(), bias.data());
  CHECK(ran == onednn::built());
  if (!ran) {
    CHECK(c == std::vector<float>(12, -1.0f));  // declined: nothing written
    CHECK(std::string(onednn::implementation(onednn::DataType::Float, p)).empty());
    return;
  }
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      double want = bias[static_cast<size_t>(j)];
      for (int64_t q = 0; q < 5; ++q) want += double(a[static_cast<size_t>(i * 5 + q)]) * b[static_cast<size_t>(q * 4 + j)];
      CHECK(c[static_cast<size_t>(i * 4 + j)] == Approx(want).margin(1e-5));
    }
  CHECK_FALSE(std::string(onednn::implementation(onednn::DataType::Float, p)).empty());
  // beta = 1 (a sum post-op) and alpha = 2 (an output scale) on the same shape: other primitives.
  std::vector<float> c2 = c;
  REQUIRE(onednn::matmul(onednn::DataType::Float, p, 2.0f, a.data(), b.data(), 1.0f, c2.data(), nullptr));
  for (size_t i = 0; i < c.size(); ++i) CHECK(c2[i] == Approx(3 * c[i] - 2 * bias[i % 4]).margin(1e-4));
}

namespace {
// A float problem whose a is transposed in memory (stored [k, m]): oneDNN packs such an a in its
// scratchpad. Operands from a seed; run() multiplies (no Catch2 macros: it runs on threads of its
// own); max_error() is the largest difference from double over every 7th column.
struct TransposedAProblem {
  StridedGemm p;
  std::vector<float> a, b;
  TransposedAProblem(int64_t m, int64_t n, int64_t k, uint32_t seed) : p(plain(m, n, k)) {
    p.a = {1, m};  // a[i, q] at i + q m
    a.resize(static_cast<size_t>(k * m));
    b.resize(static_cast<size_t>(k * n));
    uint32_t x = seed;
    for (std::vector<float>* v : {&a, &b})
      for (float& e : *v) {
        x = x * 1664525u + 1013904223u;
        e = float(x >> 8) / float(1 << 24) - 0.5f;
      }
  }
  std::vector<float> run() const {
    std::vector<float> c(static_cast<size_t>(p.m * p.n), -1.0f);
    if (!onednn::matmul(onednn::DataType::Float, p, 1.0f, a.data(), b.data(), 0.0f, c.data(), nullptr)) c.clear();
    return c;
  }
  double max_error(const std::vector<float>& c) const {
    double worst = 0;
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; j += 7) {
        double want = 0;
        for (int64_t q = 0; q < p.k; ++q)
          want += double(a[static_cast<size_t>(i + q * p.m)]) * b[static_cast<size_t>(q * p.n + j)];
        worst = std::max(worst, std::abs(double(c[static_cast<size_t>(i * p.n + j)]) - want));
      }
    return worst;
  }
};
}  // namespace

TEST_CASE("oneDNN matmul: products of different sizes in turn, and on two threads at once, each right", "[onednn]") {
  if (!onednn::built()) return;
  const TransposedAProblem small(48, 80, 600, 1), large(160, 272, 1100, 2), other(144, 96, 1000, 3);
  // Small, large, another, then small again on one thread: the thread's scratchpad grows and is
  // reused; the repeat gives the same bits.
  const std::vector<float> small_c = small.run(), large_c = large.run(), other_c = other.run();
  REQUIRE(small_c.size() == size_t{48 * 80});
  REQUIRE(large_c.size() == size_t{160 * 272});
  REQUIRE(other_c.size() == size_t{144 * 96});
  CHECK(small.max_error(small_c) < 1e-4);
  CHECK(large.max_error(large_c) < 1e-4);
  CHECK(other.max_error(other_c) < 1e-4);
  CHECK(small.run() == small_c);
  // Two threads at once, each its own problem, many times: each thread packs into its own
  // scratchpad (one shared between them gives wrong products), the same bits as alone.
  std::vector<std::vector<float>> first(40), second(40);
  std::thread t1([&] {
    for (auto& c : first) c = small.run();
  });
  std::thread t2([&] {
    for (auto& c : second) c = other.run();
  });
  t1.join();
  t2.join();
  int64_t wrong = 0;
  for (const auto& c : first) wrong += c != small_c;
  for (const auto& c : second) wrong += c != other_c;
  CHECK(wrong == 0);
}

TEST_CASE("oneDNN matmul: declines what only its reference implementation runs", "[onednn]") {
  std::vector<float> buf(64, 1.0f), out(64, -1.0f);
  StridedGemm both_strided = plain(2, 2, 2);
  both_strided.a = {4, 2};
  CHECK_FALSE(onednn::matmul(onednn::DataType::Float, both_strided, 1.0f, buf.data(), buf.data(), 0.0f, out.data(), nullptr));
  StridedGemm broadcast = plain(2, 2, 2);
  broadcast.batch_dims = 1;
  broadcast.batch = {3};
  broadcast.a = {4, 2, 1};
  broadcast.b = {0, 2, 1};
  broadcast.c = {4, 2, 1};
  CHECK_FALSE(onednn::matmul(onednn::DataType::Float, broadcast, 1.0f, buf.data(), buf.data(), 0.0f, out.data(), nullptr));
  CHECK_FALSE(onednn::matmul(onednn::DataType::Float, plain(2, 2, 0), 1.0f, buf.data(), buf.data(), 0.0f, out.data(), nullptr));
  CHECK(out == std::vector<float>(64, -1.0f));
  // bf16 runs only where oneDNN has bf16 code (AVX-512 bf16, AMX); elsewhere it declines.
  std::vector<BFloat16> h(16, BFloat16(1.0f)), hc(4);
  const bool bf16 = onednn::matmul(onednn::DataType::BFloat16, plain(2, 2, 4), 1.0f, h.data(), h.data(), 0.0f, hc.data(), nullptr);
  if (bf16) CHECK(float(hc[0]) == 4.0f);
  else CHECK(float(hc[0]) == 0.0f);
  if (!onednn::built()) CHECK_FALSE(onednn::has_avx512());
}

TEST_CASE("oneDNN matmul: errors name the values", "[onednn]") {
  float x = 0;
  StridedGemm p = plain(1, 1, 1);
  p.batch_dims = 7;
  REQUIRE_THROWS_AS(onednn::matmul(onednn::DataType::Float, p, 1.0f, &x, &x, 0.0f, &x, nullptr), remat::Error);
  REQUIRE_THROWS_WITH(onednn::matmul(onednn::DataType::Float, p, 1.0f, &x, &x, 0.0f, &x, nullptr),
                      Contains("oneDNN matmul") && Contains("7 batch dims") && Contains("at most 4"));
  REQUIRE_THROWS_WITH(onednn::matmul(onednn::DataType::Float, plain(1, 1, 1), 0.5f, &x, &x, 0.0f, &x, &x),
                      Contains("oneDNN matmul") && Contains("bias needs alpha = 1 and beta = 0") && Contains("0.5 and 0"));
}

TEST_CASE("oneDNN matmul: has_amx says whether its bf16 products run on AMX tiles", "[onednn]") {
  if (!onednn::built()) {
    CHECK_FALSE(onednn::has_amx());
    return;
  }
  const std::string impl = onednn::implementation(onednn::DataType::BFloat16, plain(64, 64, 64));
  INFO("bf16 implementation: " << impl);
  CHECK(onednn::has_amx() == (impl.find("amx") != std::string::npos));
  if (onednn::has_amx()) CHECK(onednn::has_avx512());
}
