// Shared helpers of the op tests (tests/ops/**): tensors from literal values, element checks,
// float64 leaves with unusual layouts for gradcheck, Meta tensors, and the bf16-vs-f32 check.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "remat.h"

namespace remat::testing {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// "[2, 3]" (for INFO messages; Catch does not find remat's operator<< for std::vector).
inline std::string str(const Shape& s) { return detail::str(s); }

// A CPU tensor with these row-major values.
inline Tensor tensor(const std::vector<double>& values, const Shape& shape, ScalarType dtype = kFloat) {
  return from_vector(values, shape, TensorOptions().dtype(dtype));
}

// Every element of t equals expected (row-major) within |got - want| <= tol * (1 + |want|).
inline void check_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-6) {
  std::vector<double> got = t.to_vector();
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << expected[i]);
    if (std::isnan(expected[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(expected[i])) {
      CHECK(got[i] == expected[i]);
    } else {
      CHECK(std::abs(got[i] - expected[i]) <= tol * (1.0 + std::abs(expected[i])));
    }
  }
}

inline void check_close(const Tensor& got, const Tensor& want, double tol = 1e-6) {
  REQUIRE(got.sizes() == want.sizes());
  check_values(got, want.to_vector(), tol);
}

// Fixed-seed random values (independent of the default generator).
inline Tensor randn_seeded(const Shape& shape, uint64_t seed, ScalarType dtype = kDouble) {
  Generator gen(seed);
  return randn(shape, TensorOptions().dtype(dtype), &gen);
}

// A float64 leaf requiring grad.
inline Tensor leaf(const Shape& shape, uint64_t seed) { return randn_seeded(shape, seed).requires_grad_(); }
// A float64 leaf with values in [0.5, 2.5) (log, sqrt, rsqrt, div by it).
inline Tensor positive_leaf(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return add(mul(rand(shape, TensorOptions().dtype(kDouble), &gen), 2.0), 0.5).requires_grad_();
}
// A float64 leaf of this shape stored transposed (last two dims swapped in memory).
inline Tensor transposed_leaf(Shape shape, uint64_t seed) {
  std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
  Tensor t = transpose(randn_seeded(shape, seed), -1, -2).detach().requires_grad_();
  REQUIRE_FALSE(t.is_contiguous());
  return t;
}
// A float64 leaf of this shape whose last dim has stride 2 (every other element of a buffer).
inline Tensor stepped_leaf(Shape shape, uint64_t seed) {
  shape.back() *= 2;
  Tensor t = slice(randn_seeded(shape, seed), -1, 0, std::numeric_limits<int64_t>::max(), 2).detach().requires_grad_();
  REQUIRE(t.strides().back() == 2);
  return t;
}

// gradcheck of a one-output function (throws with the mismatch on failure).
inline bool gradcheck1(const Fn& fn, const std::vector<Tensor>& inputs, double atol = 1e-5, double rtol = 1e-3) {
  return autograd::gradcheck([fn](const std::vector<Tensor>& xs) { return std::vector<Tensor>{fn(xs)}; }, inputs,
                             1e-6, atol, rtol);
}
inline bool gradgradcheck1(const Fn& fn, const std::vector<Tensor>& inputs) {
  return autograd::gradgradcheck([fn](const std::vector<Tensor>& xs) { return std::vector<Tensor>{fn(xs)}; },
                                 inputs);
}

// A Meta tensor (shape and dtype, no memory).
inline Tensor meta(const Shape& shape, ScalarType dtype = kFloat) {
  return empty(shape, TensorOptions().dtype(dtype).device(Device{kMeta}));
}

// Runs fn on bf16 copies of the inputs and on f32 tensors holding the same (bf16-rounded)
// values: the bf16 result is stored in bf16 and within bf16 tolerance of the f32 result.
inline void check_bf16_matches_f32(const Fn& fn, const std::vector<Tensor>& inputs, double rtol = 1e-2,
                                   double atol = 1e-2) {
  std::vector<Tensor> lo, ref;
  for (const Tensor& t : inputs) {
    Tensor b = t.detach().to(kBFloat16);
    lo.push_back(b);
    ref.push_back(b.to(kFloat));
  }
  Tensor got = fn(lo), want = fn(ref);
  REQUIRE(got.dtype() == kBFloat16);
  REQUIRE(want.dtype() == kFloat);
  REQUIRE(got.sizes() == want.sizes());
  std::vector<double> g = got.to_vector(), w = want.to_vector();
  for (size_t i = 0; i < g.size(); ++i) {
    INFO("element " << i << ": bf16 " << g[i] << ", f32 " << w[i]);
    CHECK(std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]));
  }
}

// Counts op calls by name (below autograd) and records the dtypes of each call's tensor args.
struct RecordingMode : DispatchMode {
  std::map<std::string, int> calls;
  std::map<std::string, std::vector<ScalarType>> arg_dtypes;  // last call's tensor argument dtypes
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    ++calls[op.name()];
    std::vector<ScalarType> dts;
    for (const IValue& a : args)
      if (a.isTensor() && a.toTensor().defined()) dts.push_back(a.toTensor().dtype());
    arg_dtypes[op.name()] = dts;
    return op.call(args);
  }
};

}  // namespace remat::testing
