// Tests ops/embedding.cpp: embedding and embedding_dense_backward.
#include <catch2/catch.hpp>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::check_values;
using remat::testing::grad_input;
using remat::testing::meta_empty;
using remat::testing::seeded_randn;
using TL = std::vector<Tensor>;

namespace {
Tensor longs(const std::vector<double>& v, const Shape& shape) { return from_vector(v, shape, kLong); }
}  // namespace

TEST_CASE("embedding gathers rows for indices of any shape", "[embedding]") {
  Tensor w = from_vector({0, 1, 10, 11, 20, 21}, {3, 2}, kDouble);
  Tensor out = embedding(w, longs({2, 0, 1, 1}, {2, 2}));
  CHECK(out.sizes() == Shape{2, 2, 2});
  check_values(out, {20, 21, 0, 1, 10, 11, 10, 11});
  // 0-d and 1-D indices
  check_values(embedding(w, from_vector({1}, {}, kLong)), {10, 11});
  CHECK(embedding(w, from_vector({1}, {}, kLong)).sizes() == Shape{2});
  CHECK(embedding(w, longs({}, {0})).sizes() == Shape{0, 2});
  // Strided weight and indices.
  Tensor wt = transpose(from_vector({0, 10, 20, 1, 11, 21}, {2, 3}, kDouble), 0, 1);  // the same table, strided
  Tensor idx = transpose(longs({2, 1, 0, 1}, {2, 2}), 0, 1);                          // [[2, 0], [1, 1]]
  check_values(embedding(wt, idx), {20, 21, 0, 1, 10, 11, 10, 11});
}

TEST_CASE("embedding_dense_backward adds repeated rows", "[embedding]") {
  Tensor idx = longs({2, 0, 2, 2}, {2, 2});
  Tensor g = from_vector({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}, kDouble);
  Tensor dw = embedding_dense_backward(g, idx, 4);
  CHECK(dw.sizes() == Shape{4, 2});
  // row 0 <- g[0,1]; row 2 <- g[0,0] + g[1,0] + g[1,1]; rows 1, 3 untouched
  check_values(dw, {3, 4, 0, 0, 1 + 5 + 7, 2 + 6 + 8, 0, 0});
}

TEST_CASE("embedding gradcheck and second-order gradcheck", "[embedding][gradcheck]") {
  Tensor w = grad_input({3, 5}, 1);
  Tensor idx = longs({4, 0, 4, 1, 2, 4}, {2, 3});  // repeated rows
  // strided weight: the table is w^T
  auto fn = [&](const TL& in) { return TL{embedding(transpose(in[0], 0, 1), idx)}; };
  CHECK(autograd::gradcheck(fn, {w}));
  CHECK(autograd::gradgradcheck(fn, {w}));
  // embedding_dense_backward in its gradient argument (strided gradient)
  auto bwd = [&](const TL& in) {
    return TL{embedding_dense_backward(transpose(in[0], 0, 1), longs({1, 1, 0}, {3}), 6)};
  };
  CHECK(autograd::gradcheck(bwd, {grad_input({4, 3}, 2)}));
}

TEST_CASE("embedding in reduced precision", "[embedding][bf16]") {
  Tensor w = seeded_randn({7, 6}, 3, kFloat);
  Tensor idx = longs({6, 0, 6, 3}, {4});
  for (ScalarType dt : {kBFloat16, kHalf}) {
    Tensor out = embedding(w.to(dt), idx);
    CHECK(out.dtype() == dt);
    CHECK(equal(out, embedding(w, idx).to(dt)));  // a gather is exact
    // The backward sums repeated rows in float and rounds once.
    Tensor g = seeded_randn({4, 6}, 4, kFloat).to(dt);
    Tensor dw = embedding_dense_backward(g, idx, 7);
    CHECK(dw.dtype() == dt);
    CHECK(equal(dw, embedding_dense_backward(g.to(kFloat), idx, 7).to(dt)));
  }
}

TEST_CASE("embedding ops on Meta infer shapes and allocate nothing", "[embedding][meta]") {
  int64_t before = memory_allocated();
  Tensor w = meta_empty({10, 4}, kBFloat16);
  Tensor idx = meta_empty({2, 3}, kLong);
  Tensor out = embedding(w, idx);
  CHECK(out.is_meta());
  CHECK(out.sizes() == Shape{2, 3, 4});
  CHECK(out.dtype() == kBFloat16);
  Tensor dw = embedding_dense_backward(out, idx, 10);
  CHECK(dw.is_meta());
  CHECK(dw.sizes() == Shape{10, 4});
  CHECK(dw.dtype() == kBFloat16);
  CHECK(memory_allocated() == before);
}

TEST_CASE("embedding errors name the op and the values", "[embedding][errors]") {
  Tensor w = ones({5, 3});
  REQUIRE_THROWS_WITH(embedding(w, longs({1, 7, 2}, {3})),
                      Contains("aten::embedding: index out of range in self: index 7 (at position 1) is not in [0, 5) "
                               "for a weight with 5 rows"));
  REQUIRE_THROWS_WITH(embedding(w, longs({-1}, {1})), Contains("index out of range in self: index -1"));
  REQUIRE_THROWS_WITH(
      embedding(w, ones({2})),
      Contains("aten::embedding: Expected tensor for argument #1 'indices' to have one of the following "
               "scalar types: Long; but got CPUFloatType instead (while checking arguments for embedding)"));
  REQUIRE_THROWS_WITH(embedding(ones({5}), longs({1}, {1})),
                      Contains("aten::embedding: 'weight' must be 2-D, but got a 1-D tensor of shape [5]"));
  REQUIRE_THROWS_WITH(embedding(w, meta_empty({2}, kLong)),
                      Contains("aten::embedding: Expected all tensors to be on the same device"));
  Tensor idx = longs({1, 2}, {2});
  REQUIRE_THROWS_WITH(embedding_dense_backward(ones({3, 4}), idx, 5),
                      Contains("aten::embedding_dense_backward: grad_output of shape [3, 4] must be the indices' shape "
                               "followed by the embedding dim (indices of shape [2])"));
  REQUIRE_THROWS_WITH(embedding_dense_backward(ones({2, 4}), longs({1, 5}, {2}), 5),
                      Contains("aten::embedding_dense_backward: index out of range in self: index 5"));
  REQUIRE_THROWS_WITH(embedding_dense_backward(ones({2, 4}), ones({2}, kDouble), 5),
                      Contains("aten::embedding_dense_backward: Expected tensor for argument #1 'indices'"));
  REQUIRE_THROWS_WITH(
      embedding_dense_backward(ones({2, 4}, kLong), idx, 5),
      Contains("aten::embedding_dense_backward: expected 'grad_output' to have a floating point dtype"));
  REQUIRE_THROWS_WITH(embedding_dense_backward(ones({2, 4}), idx, -1),
                      Contains("aten::embedding_dense_backward: num_weights must be non-negative, but got -1"));
  REQUIRE_THROWS_WITH(embedding_dense_backward(meta_empty({2, 4}), idx, 5),
                      Contains("aten::embedding_dense_backward: Expected all tensors to be on the same device"));
}
