// Tests ops/cuda/embedding.cpp: embedding on CUDA gathers rows; embedding_dense_backward sums
// gradient rows per index deterministically, in position order (so in float32 it equals a
// sequential host sum exactly); both against the CPU op through autograd on rows of 1, about 32,
// about 1024 and 4097 elements, strided weights, repeated, empty and multi-dimensional indices,
// in every floating dtype; out-of-range indices throw.
#include <catch2/catch.hpp>

#include <cmath>

#include "remat.h"
#include "tests/testing/cuda.h"
#include "tests/testing/cuda_op_check.h"

using namespace remat;
using namespace remat::testing;

TEST_CASE("embedding on CUDA gathers the weight rows", "[embedding][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  for (ScalarType dt : {kFloat, kDouble, kBFloat16, kHalf}) {
    for (int64_t dim : {int64_t{1}, int64_t{7}, int64_t{64}}) {
      Tensor w = random_cpu({11, dim}, dt, 1);
      Tensor idx = from_vector({3, 0, 10, 3, 5, 5}, {2, 3}, kLong);
      Tensor out = embedding(w.to(cuda0()), idx.to(cuda0()));
      CHECK(out.sizes() == Shape{2, 3, dim});
      std::vector<double> wv = w.to_vector(), ov = out.to_vector(), iv = idx.to_vector();
      bool same = true;
      for (size_t i = 0; i < iv.size(); ++i)
        for (int64_t d = 0; d < dim; ++d)
          same = same && ov[i * static_cast<size_t>(dim) + static_cast<size_t>(d)] ==
                             wv[static_cast<size_t>(iv[i]) * static_cast<size_t>(dim) + static_cast<size_t>(d)];
      INFO(toString(dt) << " dim " << dim);
      CHECK(same);
    }
  }
  auto opt = TensorOptions().device(cuda0());
  REQUIRE_THROWS_WITH(embedding(zeros({4, 2}, opt), from_vector({1, 4}, {2}, kLong).to(cuda0())),
                      Catch::Contains("index out of range in self: index 4 (at position 1)"));
  REQUIRE_THROWS_WITH(embedding(zeros({4, 2}, opt), from_vector({-1}, {1}, kLong).to(cuda0())),
                      Catch::Contains("index -1 (at position 0)"));
  REQUIRE_THROWS_WITH(embedding(zeros({4, 2}, opt), zeros({2}, opt)), Catch::Contains("'indices'"));
}

TEST_CASE("embedding_dense_backward on CUDA is a deterministic, ordered sum", "[embedding][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  const int64_t n = 5000, num_weights = 97, dim = 33;
  std::vector<double> iv(static_cast<size_t>(n));
  Generator gen(3);
  Tensor r = empty({n}, kDouble);
  uniform_(r, 0.0, static_cast<double>(num_weights), &gen);
  std::vector<double> rv = r.to_vector();
  for (int64_t i = 0; i < n; ++i) iv[static_cast<size_t>(i)] = std::floor(rv[static_cast<size_t>(i)] / 4);  // skewed
  Tensor idx = from_vector(iv, {50, 100}, kLong);
  Tensor g = random_cpu({50, 100, dim}, kFloat, 4);
  std::vector<float> expected(static_cast<size_t>(num_weights * dim), 0.0f);
  std::vector<double> gv = g.to_vector();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t d = 0; d < dim; ++d)
      expected[static_cast<size_t>(static_cast<int64_t>(iv[static_cast<size_t>(i)]) * dim + d)] +=
          static_cast<float>(gv[static_cast<size_t>(i * dim + d)]);
  Tensor a = embedding_dense_backward(g.to(cuda0()), idx.to(cuda0()), num_weights);
  Tensor b = embedding_dense_backward(g.to(cuda0()), idx.to(cuda0()), num_weights);
  CHECK(a.sizes() == Shape{num_weights, dim});
  CHECK(equal(a, b));  // deterministic
  std::vector<double> av = a.to_vector();
  int64_t mismatches = 0;
  for (size_t k = 0; k < av.size(); ++k) mismatches += av[k] != static_cast<double>(expected[k]);
  CHECK(mismatches == 0);  // the same additions in the same order as the host loop
  CHECK(equal(a.to(Device(kCPU)), embedding_dense_backward(g, idx, num_weights)));  // and as the CPU kernel
  for (ScalarType dt : {kDouble, kBFloat16}) {
    Tensor gd = g.to(dt);
    Tensor got = embedding_dense_backward(gd.to(cuda0()), idx.to(cuda0()), num_weights);
    std::vector<double> ref(static_cast<size_t>(num_weights * dim), 0.0), gdv = gd.to_vector();
    for (int64_t i = 0; i < n; ++i)
      for (int64_t d = 0; d < dim; ++d)
        ref[static_cast<size_t>(static_cast<int64_t>(iv[static_cast<size_t>(i)]) * dim + d)] +=
            gdv[static_cast<size_t>(i * dim + d)];
    INFO(toString(dt));
    CHECK(compare(got.to_vector(), ref, reduction_tolerance(dt)) == "");
  }
  REQUIRE_THROWS_WITH(embedding_dense_backward(g.to(cuda0()), idx.to(cuda0()), 10),
                      Catch::Contains("index out of range in self"));
}

TEST_CASE("gradcheck in float64 on CUDA for embedding", "[embedding][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  Tensor w = random_cpu({6, 3}, kDouble, 5).to(cuda0()).requires_grad_();
  Tensor idx = from_vector({1, 4, 1, 0}, {4}, kLong).to(cuda0());
  CHECK(autograd::gradcheck([idx](const std::vector<Tensor>& in) { return std::vector<Tensor>{embedding(in[0], idx)}; },
                            {w}));
}

TEST_CASE("embedding on CUDA matches the CPU, forward and backward, on every row length and layout",
          "[embedding][gpu]") {
  REMAT_REQUIRE_CUDA_DEVICE();
  // Weights [num_weights, dim]; indices: 1, 33 (a warp and one), 1025 and [3, 341] positions,
  // repeated (at most num_weights distinct), and none.
  std::vector<Shape> weights;
  for (const Shape& s : row_shapes())
    if (s[0] > 0) weights.push_back(s);
  const std::vector<Shape> index_shapes = {{1}, {33}, {1025}, {3, 341}, {0}, {2, 0}};
  uint64_t seed = 0;
  // The weight is read through a contiguous copy, so the layouts that matter are the vector
  // path (contiguous), the element path (offset: misaligned) and a strided copy (transposed).
  for (const Case& c : cases(floating_types(), weights, {Layout::Contiguous, Layout::Offset, Layout::Transposed})) {
    for (const Shape& is : index_shapes) {
      int64_t n = 1;
      for (int64_t d : is) n *= d;
      if (n * c.shape[1] > (int64_t{1} << 20)) continue;  // outputs of at most ~1M elements
      Tensor idx = random_indices(is, c.shape[0], ++seed);
      INFO(describe(c) << " indices " << str(is));
      CHECK(cuda_vs_cpu([](const std::vector<Tensor>& in) { return embedding(in[0], in[1]); },
                        {arg(c.shape).in(c.layout), fixed(idx)}, c.dtype,
                        options(Kind::Elementwise, c.dtype, Kind::Reduction, true, seed)) == "");
    }
  }
}
