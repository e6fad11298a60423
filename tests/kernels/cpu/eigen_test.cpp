// Tests kernels/cpu/eigen.h: IeeeSqrt, the sqrt remat's Eigen expressions take, gives std::sqrt's
// bits (IEEE 754's correctly rounded root, PyTorch's) on vectorised rows, float and double,
// inf, -0 and NaN included.
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
