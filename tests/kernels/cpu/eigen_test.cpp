// Tests kernels/cpu/eigen.h: IeeeSqrt, the sqrt remat's Eigen expressions take, gives std::sqrt's
// bits (IEEE 754's correctly rounded root, PyTorch's) on vectorised rows, float and double,
// inf, -0 and NaN included; FullRangeLog gives std::log's values for subnormal inputs too, and
// FullRangeExp std::exp's over the whole range of results (subnormal ones, the top of the range).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/eigen.h"

namespace cpu = remat::kernels::cpu;

namespace {

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0 || (std::isnan(a) && std::isnan(b));
}

template <class T>
void check_ieee_sqrt() {
  const T inf = std::numeric_limits<T>::infinity();
  std::vector<T> x = {inf,
                      T(-0.0),
                      T(0.0),
                      T(-1),
                      -inf,
                      std::numeric_limits<T>::quiet_NaN(),
                      std::numeric_limits<T>::min(),
                      std::numeric_limits<T>::denorm_min(),
                      std::numeric_limits<T>::max()};
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> exponent(-30, 30);
  while (x.size() < 1000) x.push_back(T(std::exp(exponent(gen))));  // long enough for the packets, a tail too
  Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> xa(x.data(), static_cast<Eigen::Index>(x.size()));
  const Eigen::Array<T, Eigen::Dynamic, 1> y = xa.unaryExpr(cpu::IeeeSqrt());
  int differ = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const T want = std::sqrt(x[i]);
    INFO("sqrt(" << x[i] << "): " << y[static_cast<Eigen::Index>(i)] << ", std::sqrt " << want);
    if (i < 9) CHECK(same_bits(y[static_cast<Eigen::Index>(i)], want));  // the special values, each checked
    differ += !same_bits(y[static_cast<Eigen::Index>(i)], want);
  }
  CHECK(differ == 0);
  CHECK(std::signbit(y[1]));  // sqrt(-0) is -0
  CHECK(std::isinf(y[0]));
}

}  // namespace

TEST_CASE("IeeeSqrt gives std::sqrt's bits on vectorised rows (inf, -0, NaN and subnormals too)", "[eigen]") {
  check_ieee_sqrt<float>();
  check_ieee_sqrt<double>();
}

namespace {

template <class T>
void check_full_range_log() {
  const T inf = std::numeric_limits<T>::infinity();
  std::vector<T> x = {std::numeric_limits<T>::denorm_min(),
                      T(std::numeric_limits<T>::min() / 3),
                      std::numeric_limits<T>::min(),
                      T(0.0),
                      T(-0.0),
                      T(-1),
                      -std::numeric_limits<T>::denorm_min(),
                      inf,
                      -inf,
                      std::numeric_limits<T>::quiet_NaN()};
  std::mt19937 gen(11);
  std::uniform_real_distribution<double> mantissa(1, 2);
  std::uniform_int_distribution<int> exponent(std::numeric_limits<T>::min_exponent - std::numeric_limits<T>::digits,
                                              std::numeric_limits<T>::max_exponent - 1);
  while (x.size() < 1000) x.push_back(T(std::ldexp(mantissa(gen), exponent(gen))));  // subnormals among them
  Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> xa(x.data(), static_cast<Eigen::Index>(x.size()));
  const Eigen::Array<T, Eigen::Dynamic, 1> y = xa.unaryExpr(cpu::FullRangeLog());
  int subnormals = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const T got = y[static_cast<Eigen::Index>(i)], want = std::log(x[i]);
    subnormals += std::fpclassify(x[i]) == FP_SUBNORMAL;
    INFO("log(" << x[i] << "): " << got << ", std::log " << want);
    if (std::isnan(want) || std::isinf(want)) {
      CHECK((std::isnan(got) == std::isnan(want) && (std::isnan(want) || got == want)));
    } else {
      CHECK(std::abs(got - want) <= 4 * std::numeric_limits<T>::epsilon() * std::abs(want));
    }
  }
  CHECK(subnormals > 10);
}

}  // namespace

TEST_CASE("FullRangeLog gives std::log's values, subnormal inputs included (Eigen's log took them for the smallest "
          "normal)",
          "[eigen]") {
  check_full_range_log<float>();
  check_full_range_log<double>();
}

namespace {

template <class T>
void check_full_range_exp() {
  const T inf = std::numeric_limits<T>::infinity();
  const double lowest = std::log(double(std::numeric_limits<T>::denorm_min())) - 1;  // below: 0
  const double highest = std::log(double(std::numeric_limits<T>::max()));            // above: inf
  std::vector<T> x = {-inf, inf, std::numeric_limits<T>::quiet_NaN(), T(0), T(-0.0), T(highest), T(highest + 1e-3),
                      T(lowest)};
  for (int i = 0; x.size() < 2000; ++i) x.push_back(T(lowest + (highest - lowest) * double(i) / 1990.0));
  Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> xa(x.data(), static_cast<Eigen::Index>(x.size()));
  const Eigen::Array<T, Eigen::Dynamic, 1> y = xa.unaryExpr(cpu::FullRangeExp());
  int subnormals = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const T got = y[static_cast<Eigen::Index>(i)], want = std::exp(x[i]);
    subnormals += std::fpclassify(want) == FP_SUBNORMAL;
    INFO("exp(" << x[i] << "): " << got << ", std::exp " << want);
    if (std::isnan(want) || std::isinf(want) || want == 0) {
      CHECK((std::isnan(got) == std::isnan(want) && (std::isnan(want) || got == want)));
    } else {
      // a few ulp, or a few units of a subnormal's last place
      CHECK(std::abs(got - want) <=
            8 * std::numeric_limits<T>::epsilon() * std::abs(want) + 4 * std::numeric_limits<T>::denorm_min());
    }
  }
  CHECK(subnormals > 10);
}

}  // namespace

TEST_CASE("FullRangeExp gives std::exp's values over the whole range: subnormal results, the top, -inf to 0",
          "[eigen]") {
  // Eigen's exp gave 0 for float's subnormal results, inf from exp(88.38f) on, and 5.6e-309 for
  // double's exp(-inf)
  check_full_range_exp<float>();
  check_full_range_exp<double>();
}
