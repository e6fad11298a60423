// Tests kernels/cpu/prefetch.h: a prefetch past the end of a buffer, into a page that may not be
// read, is harmless, and so are the kernels that prefetch ahead of their loads when their input
// ends at such a page (their results unchanged: the same bits as a copy of the input elsewhere):
// gelu (tanh) and its backward, layer_norm's forward and its backward row, fused_adamw, and the
// bfloat16 binary run.
#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/core/bfloat16.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/fused_adam.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/pointwise.h"
#include "kernels/cpu/prefetch.h"

namespace cpu = remat::kernels::cpu;

namespace {

// One readable page followed by one that faults on any access; unmapped when destroyed.
// (Each buffer gets its own: kernels read several inputs, each prefetched ahead.)
struct GuardedPage {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* base = nullptr;
  GuardedPage() {
    void* p = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(p != MAP_FAILED);
    base = static_cast<char*>(p);
    REQUIRE(mprotect(base + page, page, PROT_NONE) == 0);
  }
  ~GuardedPage() { munmap(base, 2 * page); }
  // n elements of T ending exactly at the guard page
  template <class T = float>
  T* floats_at_end(int64_t n) {
    return reinterpret_cast<T*>(base + page) - n;
  }
};

}  // namespace

TEST_CASE("prefetch_ahead past the end of a buffer, into a page that faults, is harmless", "[prefetch]") {
  GuardedPage g;
  float* last = g.floats_at_end(1);
  *last = 1.5f;
  cpu::prefetch_ahead(last);  // kPrefetchBytes into the guard page
  cpu::prefetch_ahead(g.base + g.page - 64);
  CHECK(*last == 1.5f);
}

#if defined(REMAT_GELU_TANH_AVX512)
TEST_CASE("gelu_backward (tanh) with its inputs ending at a page that faults: the same bits", "[prefetch]") {
  GuardedPage gx, gg;
  for (int64_t n : {int64_t{16}, int64_t{37}, int64_t{512}}) {
    float* x = gx.floats_at_end(n);
    float* grad = gg.floats_at_end(n);
    std::vector<float> x_copy(static_cast<size_t>(n)), grad_copy(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      x[i] = x_copy[static_cast<size_t>(i)] = -3.0f + 0.17f * static_cast<float>(i % 41);
      grad[i] = grad_copy[static_cast<size_t>(i)] = 1.0f - 0.01f * static_cast<float>(i);
    }
    std::vector<float> out(static_cast<size_t>(n)), expected(static_cast<size_t>(n));
    cpu::gelu_tanh_backward_avx512(out.data(), grad, x, n);
    cpu::gelu_tanh_backward_avx512(expected.data(), grad_copy.data(), x_copy.data(), n);
    CHECK(std::memcmp(out.data(), expected.data(), out.size() * sizeof(float)) == 0);
  }
}
#endif

#if defined(__AVX512F__)
TEST_CASE("layer_norm's backward row with its inputs ending at a page that faults: the same bits", "[prefetch]") {
  GuardedPage gx, gg;
  const int64_t N = 256;
  float* x = gx.floats_at_end(N);
  float* dy = gg.floats_at_end(N);
  std::vector<float> x_copy(N), dy_copy(N), weight(N, 0.75f);
  for (int64_t j = 0; j < N; ++j) {
    x[j] = x_copy[static_cast<size_t>(j)] = 0.01f * static_cast<float>(j % 53) - 0.2f;
    dy[j] = dy_copy[static_cast<size_t>(j)] = 0.5f - 0.003f * static_cast<float>(j);
  }
  std::vector<float> dx(N), dx_expected(N), dw(N, 0.0f), dw_expected(N, 0.0f), db(N, 0.0f), db_expected(N, 0.0f);
  cpu::detail::layer_norm_backward_row_avx512(dx.data(), dw.data(), db.data(), dy, x, 0.05f, 1.3f, weight.data(), N);
  cpu::detail::layer_norm_backward_row_avx512(dx_expected.data(), dw_expected.data(), db_expected.data(), dy_copy.data(),
                                              x_copy.data(), 0.05f, 1.3f, weight.data(), N);
  CHECK(std::memcmp(dx.data(), dx_expected.data(), N * sizeof(float)) == 0);
  CHECK(std::memcmp(dw.data(), dw_expected.data(), N * sizeof(float)) == 0);
  CHECK(std::memcmp(db.data(), db_expected.data(), N * sizeof(float)) == 0);
}
#endif

TEMPLATE_TEST_CASE("fused_adamw with p, g, m and v ending at pages that fault: the same bits", "[prefetch]", float,
                   remat::BFloat16) {
  using T = TestType;
  const cpu::AdamWStep step{1e-3, 0.9, 0.999, 0.01, 1e-8, 3, false};
  for (int64_t n : {int64_t{16}, int64_t{37}, int64_t{600}}) {
    GuardedPage pages[4];
    T* at_end[4];
    std::vector<T> copies[4];
    for (int b = 0; b < 4; ++b) {
      at_end[b] = pages[b].floats_at_end<T>(n);
      copies[b].resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i)
        at_end[b][i] = copies[b][static_cast<size_t>(i)] = T(0.01f * static_cast<float>((i * (b + 3)) % 29) + 0.1f * b);
    }
    cpu::fused_adamw(at_end[0], at_end[1], at_end[2], at_end[3], n, step);
    cpu::fused_adamw(copies[0].data(), copies[1].data(), copies[2].data(), copies[3].data(), n, step);
    for (int b : {0, 2, 3})  // p, m and v updated
      CHECK(std::memcmp(at_end[b], copies[b].data(), static_cast<size_t>(n) * sizeof(T)) == 0);
  }
}

TEMPLATE_TEST_CASE("layer_norm's forward with x ending at a page that faults: the same bits", "[prefetch]", float,
                   remat::BFloat16) {
  using T = TestType;
  const int64_t M = 6, N = 40;
  GuardedPage page;
  T* x = page.floats_at_end<T>(M * N);
  // The copy at x's offset within 64 bytes: Eigen's row sums peel by alignment (another order)
  std::vector<T> storage(static_cast<size_t>(M * N + 64));
  const uintptr_t want = reinterpret_cast<uintptr_t>(x) % 64;
  T* x_copy = storage.data();
  while (reinterpret_cast<uintptr_t>(x_copy) % 64 != want) ++x_copy;
  for (int64_t i = 0; i < M * N; ++i) x[i] = x_copy[i] = T(0.05f * static_cast<float>(i % 23) - 0.4f);
  std::vector<float> weight(N, 1.25f), bias(N, -0.5f), mean(M), rstd(M), mean_expected(M), rstd_expected(M);
  std::vector<T> y(static_cast<size_t>(M * N)), y_expected(static_cast<size_t>(M * N));
  cpu::layer_norm_forward(y.data(), mean.data(), rstd.data(), x, weight.data(), bias.data(), M, N, 1e-5);
  cpu::layer_norm_forward(y_expected.data(), mean_expected.data(), rstd_expected.data(), x_copy, weight.data(),
                          bias.data(), M, N, 1e-5);
  CHECK(std::memcmp(y.data(), y_expected.data(), y.size() * sizeof(T)) == 0);
  CHECK(mean == mean_expected);
  CHECK(rstd == rstd_expected);
}

#if defined(REMAT_GELU_TANH_AVX512)
TEMPLATE_TEST_CASE("gelu (tanh) with x ending at a page that faults: the same bits", "[prefetch]", float, remat::BFloat16) {
  using T = TestType;
  GuardedPage page;
  for (int64_t n : {int64_t{32}, int64_t{45}, int64_t{1000}}) {
    T* x = page.floats_at_end<T>(n);
    std::vector<T> x_copy(static_cast<size_t>(n)), out(static_cast<size_t>(n)), expected(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) x[i] = x_copy[static_cast<size_t>(i)] = T(0.11f * static_cast<float>(i % 57) - 3.0f);
    cpu::gelu_tanh_avx512(out.data(), x, n);
    cpu::gelu_tanh_avx512(expected.data(), x_copy.data(), n);
    CHECK(std::memcmp(out.data(), expected.data(), out.size() * sizeof(T)) == 0);
  }
}
#endif

#if defined(__AVX512F__)
TEST_CASE("bfloat16 add with both inputs ending at pages that fault: the same bits", "[prefetch]") {
  using remat::BFloat16;
  GuardedPage px, py;
  for (int64_t n : {int64_t{16}, int64_t{50}, int64_t{1024}}) {
    BFloat16* x = px.floats_at_end<BFloat16>(n);
    BFloat16* y = py.floats_at_end<BFloat16>(n);
    std::vector<BFloat16> x_copy(static_cast<size_t>(n)), y_copy(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      x[i] = x_copy[static_cast<size_t>(i)] = BFloat16(0.3f * static_cast<float>(i % 19) - 2.0f);
      y[i] = y_copy[static_cast<size_t>(i)] = BFloat16(1.0f / static_cast<float>(i + 1));
    }
    std::vector<BFloat16> out(static_cast<size_t>(n)), expected(static_cast<size_t>(n));
    cpu::binary_bf16_run_avx512<cpu::AddOp>(out.data(), x, y, 1, 1, n);
    cpu::binary_bf16_run_avx512<cpu::AddOp>(expected.data(), x_copy.data(), y_copy.data(), 1, 1, n);
    CHECK(std::memcmp(out.data(), expected.data(), out.size() * sizeof(BFloat16)) == 0);
  }
}
#endif
