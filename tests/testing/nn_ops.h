// Helpers shared by the tests of the transformer ops (softmax, normalization, dropout, embedding,
// loss, attention): seeded inputs, value comparisons, an op-counting dispatch mode.
#pragma once

#include <algorithm>
#include <any>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "remat.h"

namespace remat::testing {

// N(0, 1) values from a fixed seed, as dtype (float64 by default).
inline Tensor seeded_randn(const Shape& shape, uint64_t seed, ScalarType dtype = kDouble) {
  Generator gen(seed);
  return randn(shape, TensorOptions().dtype(dtype), &gen);
}

// A float64 leaf that requires grad (what gradcheck differentiates).
inline Tensor grad_input(const Shape& shape, uint64_t seed) { return seeded_randn(shape, seed).requires_grad_(true); }

// Largest |a - b| (same number of elements, compared in row-major order).
inline double max_abs_diff(const Tensor& a, const Tensor& b) {
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  REQUIRE(x.size() == y.size());
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

// t's values (row-major) equal expected, each within a relative epsilon (Catch's Approx).
inline void check_values(const Tensor& t, const std::vector<double>& expected, double epsilon = 1e-12) {
  std::vector<double> v = t.to_vector();
  REQUIRE(v.size() == expected.size());
  for (size_t i = 0; i < v.size(); ++i) {
    INFO("element " << i);
    CHECK(v[i] == Approx(expected[i]).epsilon(epsilon));
  }
}

// Every element of a within atol + rtol * |b| of b.
inline bool all_close(const Tensor& a, const Tensor& b, double rtol, double atol) {
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::abs(x[i] - y[i]) <= atol + rtol * std::abs(y[i]))) return false;
  return true;
}

// A dispatch mode that counts op calls by name and runs each op.
struct OpCounter : DispatchMode {
  std::map<std::string, int> calls;
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    ++calls[op.name()];
    return op.call(args);
  }
  int count(const std::string& name) const {
    auto it = calls.find(name);
    return it == calls.end() ? 0 : it->second;
  }
};

// Counts saved-tensor packs while alive. Packs a detached alias: packing an output itself would
// make a reference cycle (output -> node -> packed output) when no backward frees it.
struct PackCounter {
  int packs = 0;
  autograd::saved_tensors_hooks hooks{[this](const Tensor& t) -> std::any {
                                        ++packs;
                                        return t.detach();
                                      },
                                      [](const std::any& a) { return std::any_cast<Tensor>(a); }};
};

// Tensors on the Meta device (shape and dtype only).
inline Tensor meta_empty(const Shape& shape, ScalarType dtype = kFloat) {
  return empty(shape, TensorOptions().dtype(dtype).device(Device{kMeta}));
}

}  // namespace remat::testing
