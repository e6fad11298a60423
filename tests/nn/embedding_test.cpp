// Tests nn/embedding.cpp: N(0, 1) initialisation, row lookup, gradient accumulation, errors.
#include <catch2/catch.hpp>
#include <cmath>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::check_values;

TEST_CASE("Embedding is initialised from N(0, 1), as PyTorch's", "[embedding]") {
  Generator gen(11);
  nn::Embedding emb(200, 50, &gen);
  CHECK(emb.weight.sizes() == Shape{200, 50});
  std::vector<double> w = emb.weight.to_vector();
  double mean = 0, sq = 0;
  for (double x : w) mean += x / static_cast<double>(w.size());
  for (double x : w) sq += (x - mean) * (x - mean) / static_cast<double>(w.size());
  // 10000 draws: standard errors 0.01 (mean) and ~0.007 (std)
  CHECK(std::abs(mean) < 0.05);
  CHECK(std::abs(std::sqrt(sq) - 1.0) < 0.05);
  Generator same(11);
  CHECK(equal(nn::Embedding(200, 50, &same).weight, emb.weight));
}

TEST_CASE("Embedding looks up rows for indices of any shape", "[embedding]") {
  nn::Embedding emb(4, 3, nullptr, kDouble);
  {
    autograd::NoGradGuard no_grad;
    copy_(emb.weight, from_vector({0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}, {4, 3}, kDouble));
  }
  Tensor idx = from_vector({0, 2, 2, 3}, {2, 2}, kLong);
  Tensor out = emb(idx);
  CHECK(out.sizes() == Shape{2, 2, 3});
  check_values(out, {0, 1, 2, 20, 21, 22, 20, 21, 22, 30, 31, 32});
  CHECK(emb(scalar_tensor(1, kLong)).sizes() == Shape{3});
}

TEST_CASE("Embedding's gradient accumulates over repeated indices", "[embedding]") {
  nn::Embedding emb(4, 2, nullptr, kDouble);
  Tensor idx = from_vector({1, 3, 1, 1}, {4}, kLong);
  sum(emb(idx)).backward();
  check_values(emb.weight.grad(), {0, 0, 3, 3, 0, 0, 1, 1});
}

TEST_CASE("Embedding errors", "[embedding]") {
  REQUIRE_THROWS_WITH(nn::Embedding(0, 3), Contains("Embedding: sizes must be positive (got 0, 3)"));
  REQUIRE_THROWS_WITH(nn::Embedding(3, -2), Contains("Embedding: sizes must be positive (got 3, -2)"));
  nn::Embedding emb(4, 2);
  REQUIRE_THROWS_WITH(emb(from_vector({1, 4}, {2}, kLong)), Contains("index out of range in self: index 4"));
  REQUIRE_THROWS_WITH(emb(from_vector({1, 2}, {2}, kFloat)),
                      Contains("Expected tensor for argument #1 'indices' to have one of the following scalar types: Long"));
}
