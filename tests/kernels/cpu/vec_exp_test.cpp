// Tests kernels/cpu/vec_exp.h (exp16) against std::exp in double: every 2003rd float of [-87, 88.72]
// within 1.1 ulp of the float result, the edges (overflow to inf, 0 below e^-87) and the special
// values.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/cpu/vec_exp.h"

#if defined(__AVX512F__)
namespace {
// The error of got against exp(v) in units of the last place of the correctly rounded float (inf
// for a NaN).
double ulps(float got, float v) {
  const double want = std::exp(double(v));
  const float rounded = float(want);
  const double ulp = double(std::nextafter(rounded, std::numeric_limits<float>::infinity())) - double(rounded);
  const double e = std::abs(double(got) - want) / ulp;
  return std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
}
// exp16 of v in lane 7 of 16; the other lanes hold -8 ... 7 and must come out right too (no lane
// leaks into another), else a signalling NaN is returned, which every check below refuses.
float exp_lane(float v) {
  alignas(64) float in[16], out[16];
  for (int k = 0; k < 16; ++k) in[k] = float(k) - 8.0f;
  in[7] = v;
  _mm512_store_ps(out, remat::kernels::cpu::exp16(_mm512_load_ps(in)));
  for (int k = 0; k < 16; ++k)
    if (k != 7 && !(ulps(out[k], in[k]) <= 1.1)) return std::numeric_limits<float>::signaling_NaN();
  return out[7];
}
}  // namespace

TEST_CASE("exp16 is within 1.1 ulp of exp from e^-87 to FLT_MAX", "[vec_exp]") {
  double worst = 0;
  float worst_at = 0;
  int64_t points = 0;
  // Every 2003rd bit pattern, the values in [-87, 89) where exp is a finite float.
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 2003) {
    const uint32_t b = static_cast<uint32_t>(bits);
    float v;
    std::memcpy(&v, &b, sizeof v);
    if (!(v >= -87.0f && v < 89.0f) || std::isinf(float(std::exp(double(v))))) continue;  // the edges: below
    const double e = ulps(exp_lane(v), v);
    ++points;
    if (e > worst) {
      worst = e;
      worst_at = v;
    }
  }
  INFO("worst " << worst << " ulp at " << worst_at << " over " << points << " points");
  CHECK(points > 1000000 / 2);
  CHECK(worst <= 1.1);
}

TEST_CASE("exp16 at the edges: overflow to inf, 0 below e^-87, inf, -inf, NaN, zeros", "[vec_exp]") {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  CHECK(ulps(exp_lane(88.72f), 88.72f) <= 1.1);  // among the largest finite results: not inf
  CHECK(exp_lane(88.73f) == kInf);
  CHECK(exp_lane(1000.0f) == kInf);
  CHECK(exp_lane(kInf) == kInf);
  CHECK(exp_lane(-kInf) == 0.0f);
  CHECK(exp_lane(-1000.0f) == 0.0f);
  CHECK(exp_lane(-104.0f) == 0.0f);
  const float nan = exp_lane(std::numeric_limits<float>::quiet_NaN());
  CHECK(std::isnan(nan));
  CHECK(exp_lane(1.0f) == Approx(std::exp(1.0)).epsilon(1e-7));  // the other lanes checked again
  CHECK(exp_lane(0.0f) == 1.0f);
  CHECK(exp_lane(-0.0f) == 1.0f);
  // From e^-87 down the results are 0, as Eigen's packet exp's are: e^-87 = 1.6e-38 is the least
  // result that is not 0, and a result rounded to a denormal would cost a microcode assist.
  CHECK(exp_lane(-87.0f) > 1.6e-38f);
  CHECK(ulps(exp_lane(-87.0f), -87.0f) <= 1.1);
  for (float v : {-87.01f, -87.5f, -90.0f, -95.0f, -100.0f, -103.9f}) {
    INFO("x " << v);
    CHECK(exp_lane(v) == 0.0f);
  }
}
#endif  // without AVX-512 there is no exp16 (its callers run Eigen's expressions)
