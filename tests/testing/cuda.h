// Test helpers for CUDA tests: failing visibly without a device, and comparing a CUDA result with
// a reference (the CPU op, or a host computation) element by element (tests/testing/cuda_op_check.h
// builds the table-driven CUDA-against-CPU checks on these).
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "remat.h"

// First statement of every test case that needs a CUDA device: a GPU, or the emulated device of
// --config=cuda_emu (which runs the same kernels on the CPU, so every case runs on any machine).
//
// Where there is neither (a --config=cuda build run on a machine without a GPU), the case cannot
// run, and it must not be counted as passed: Catch2 v2 has no "skipped" result, and a case that
// returned early would read as passed. So the case FAILS, with a message that starts "no CUDA
// device: skipped" (tools/gpu_check.sh counts those lines) and says how to run it without a GPU.
// A build without CUDA compiles no CUDA test case at all (tests/defs.bzl: the binaries are
// empty, "No tests ran"), so nothing is counted there either. Cases that need no device (the
// registration checks, host-side helpers) do not start with this macro and run everywhere.
#define REMAT_REQUIRE_CUDA_DEVICE()                                                                       \
  do {                                                                                                    \
    if (!::remat::cuda_is_available()) {                                                                  \
      FAIL("no CUDA device: skipped, and counted as failed (it did not run); run it on a GPU, or on the " \
           "CPU with --config=cuda_emu");                                                                  \
    }                                                                                                     \
  } while (0)

namespace remat::testing {

// Tolerances (|actual - expected| <= atol + rtol * |expected|), set once per kind of result.
struct Tolerance {
  double rtol, atol;
};
constexpr Tolerance kF32Elementwise{1e-5, 1e-6};
constexpr Tolerance kF32Reduction{1e-4, 1e-5};  // sums, matmul (TF32 off), normalisations
constexpr Tolerance kF64{1e-12, 1e-12};
constexpr Tolerance kBF16{1e-2, 1e-2};
constexpr Tolerance kF16{1e-3, 1e-3};

// "" when every element is within tolerance, else a description of the worst element.
inline std::string compare(const std::vector<double>& actual, const std::vector<double>& expected, Tolerance tol) {
  if (actual.size() != expected.size()) {
    return "size mismatch: " + std::to_string(actual.size()) + " vs " + std::to_string(expected.size());
  }
  double worst = 0;
  size_t at = 0;
  bool bad = false;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) && std::isnan(e)) continue;
      std::ostringstream os;
      os << "NaN mismatch at " << i << ": " << a << " vs " << e;
      return os.str();
    }
    if (std::isinf(a) || std::isinf(e)) {
      if (a == e) continue;
      std::ostringstream os;
      os << "inf mismatch at " << i << ": " << a << " vs " << e;
      return os.str();
    }
    const double excess = std::abs(a - e) - (tol.atol + tol.rtol * std::abs(e));
    if (excess > 0 && (!bad || excess > worst)) {
      bad = true;
      worst = excess;
      at = i;
    }
  }
  if (!bad) return "";
  std::ostringstream os;
  os.precision(10);
  os << "element " << at << ": " << actual[at] << " vs expected " << expected[at] << " (|diff| "
     << std::abs(actual[at] - expected[at]) << ", allowed " << tol.atol + tol.rtol * std::abs(expected[at]) << ")";
  return os.str();
}

inline std::string compare(const Tensor& actual, const Tensor& expected, Tolerance tol) {
  if (actual.sizes() != expected.sizes()) {
    std::ostringstream os;
    os << "shape mismatch: " << actual.sizes() << " vs " << expected.sizes();
    return os.str();
  }
  if (actual.dtype() != expected.dtype()) {
    return std::string("dtype mismatch: ") + toString(actual.dtype()) + " vs " + toString(expected.dtype());
  }
  return compare(actual.to_vector(), expected.to_vector(), tol);
}

// The tolerance for a dtype's elementwise results.
inline Tolerance elementwise_tolerance(ScalarType t) {
  switch (t) {
    case kDouble: return kF64;
    case kBFloat16: return kBF16;
    case kHalf: return kF16;
    default: return kF32Elementwise;
  }
}
inline Tolerance reduction_tolerance(ScalarType t) {
  switch (t) {
    case kDouble: return Tolerance{1e-10, 1e-10};
    case kBFloat16: return kBF16;
    case kHalf: return kF16;
    default: return kF32Reduction;
  }
}

inline Device cuda0() { return Device{kCUDA, 0}; }

// "[2, 3]" (Catch's INFO cannot find remat's operator<< for a Shape).
inline std::string str(const Shape& shape) {
  std::ostringstream os;
  os << shape;
  return os.str();
}

// A random CPU tensor (normal, or uniform in [lo, hi)) from a fixed generator.
inline Tensor random_cpu(const Shape& shape, ScalarType dtype, uint64_t seed, double lo = 0, double hi = 0) {
  Generator g(seed);
  Tensor t = empty(shape, TensorOptions().dtype(kDouble));
  if (lo == hi) {
    normal_(t, 0.0, 1.0, &g);
  } else {
    uniform_(t, lo, hi, &g);
  }
  return t.to(dtype);
}

}  // namespace remat::testing
