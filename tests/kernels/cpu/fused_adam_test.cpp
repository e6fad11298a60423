// Tests kernels/cpu/fused_adam.h (ATen/native/cpu/FusedAdamKernel.cpp): each element's update
// depends on that element alone, bit for bit, wherever it falls (a whole vector, a tail, another
// thread's chunk), and follows AdamW's rule.
#include "kernels/cpu/fused_adam.h"

#include <catch2/catch.hpp>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace cpu = remat::kernels::cpu;
using remat::BFloat16;

namespace {

template <class T>
struct State {
  std::vector<T> p, g, m, v;
  explicit State(int64_t n) : p(n), g(n), m(n), v(n) {
    for (int64_t k = 0; k < n; ++k) {
      p[k] = T(std::sin(0.7f * float(k)));
      g[k] = T(std::cos(0.3f * float(k)) * 0.1f);
      m[k] = T(0.01f * std::sin(0.11f * float(k)));
      v[k] = T(1e-4f * (1.0f + std::cos(0.05f * float(k))));
    }
  }
  void step(int64_t b, int64_t e, const cpu::AdamWStep& s, int threads) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    cpu::fused_adamw(p.data() + b, g.data() + b, m.data() + b, v.data() + b, e - b, s);
    omp_set_num_threads(before);
  }
};

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace

TEMPLATE_TEST_CASE("fused AdamW: every element's update is the same bits wherever it falls", "[fused_adam]", float,
                   BFloat16) {
  const cpu::AdamWStep s{1e-3, 0.9, 0.999, 0.01, 1e-8, 3, false};
  const int64_t n = 2 * cpu::kGrainSize + 37;  // two threads' chunks, and a tail of no whole vector
  State<TestType> whole(n), two(n), pieces(n);
  whole.step(0, n, s, 1);
  two.step(0, n, s, 2);
  // the same elements in uneven pieces: every element lands at another place in its vector
  for (int64_t b = 0, len = 1; b < n; b += len, len = len % 23 + 5) pieces.step(b, std::min(n, b + len), s, 1);
  CHECK(same_bits(two.p, whole.p));
  CHECK(same_bits(two.m, whole.m));
  CHECK(same_bits(two.v, whole.v));
  CHECK(same_bits(pieces.p, whole.p));
  CHECK(same_bits(pieces.m, whole.m));
  CHECK(same_bits(pieces.v, whole.v));

  // AdamW's rule in double for a few elements (the kernel computes in float)
  const State<TestType> start(n);
  const bool f32 = std::is_same_v<TestType, float>;
  const double tol = f32 ? 1e-6 : 1e-2, margin = f32 ? 1e-9 : 1e-5;  // margin: a moment near 0
  for (int64_t k : {int64_t(0), int64_t(5), n / 2, n - 1}) {
    const double g = float(start.g[k]), m0 = float(start.m[k]), v0 = float(start.v[k]), p0 = float(start.p[k]);
    const double m = 0.9 * m0 + 0.1 * g, v = 0.999 * v0 + 0.001 * g * g;
    const double bc1 = 1 - std::pow(0.9, 3), bc2 = 1 - std::pow(0.999, 3);
    const double p = p0 * (1 - 1e-3 * 0.01) - 1e-3 / bc1 * m / (std::sqrt(v / bc2) + 1e-8);
    INFO("element " << k);
    CHECK(float(whole.m[k]) == Approx(m).epsilon(tol).margin(margin));
    CHECK(float(whole.v[k]) == Approx(v).epsilon(tol).margin(margin));
    CHECK(float(whole.p[k]) == Approx(p).epsilon(tol).margin(100 * margin));
  }
}
