// Tests ops/attention.cpp: scaled_dot_product_attention as a composite of primitive ops, and how it
// picks its backend (sdpa_kernel).
#include <any>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <optional>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::check_values;
using remat::testing::grad_input;
using remat::testing::max_abs_diff;
using remat::testing::meta_empty;
using remat::testing::OpCounter;
using remat::testing::PackCounter;
using remat::testing::seeded_randn;
using TL = std::vector<Tensor>;

namespace {
// p0 = softmax([1/sqrt(2), 0])[0] = sigmoid(1/sqrt(2))
constexpr double kP0 = 0.6697615493266569;
}  // namespace

TEST_CASE("sdpa matches hand-computed values", "[attention]") {
  Tensor k = from_vector({1, 0, 0, 1}, {2, 2}, kDouble);
  Tensor v = from_vector({1, 2, 3, 4}, {2, 2}, kDouble);
  // scores = q k^T / sqrt(2) = [1/sqrt(2), 0]
  check_values(scaled_dot_product_attention(from_vector({1, 0}, {1, 2}, kDouble), k, v), {3 - 2 * kP0, 4 - 2 * kP0});
  // causal: query 0 sees key 0 only; query 1 sees both
  Tensor q = from_vector({1, 0, 0, 1}, {2, 2}, kDouble);
  check_values(scaled_dot_product_attention(q, k, v, /*is_causal=*/true), {1, 2, 1 + 2 * kP0, 2 + 2 * kP0});
  check_values(scaled_dot_product_attention(q, k, v, false), {3 - 2 * kP0, 4 - 2 * kP0, 1 + 2 * kP0, 2 + 2 * kP0});
}

TEST_CASE("sdpa equals its definition on batched, strided inputs", "[attention]") {
  // [B, L, H, E] -> [B, H, L, E] (a transposed view, as in a real attention block)
  Tensor q = transpose(seeded_randn({2, 5, 3, 4}, 1), 1, 2);
  Tensor k = transpose(seeded_randn({2, 6, 3, 4}, 2), 1, 2);
  Tensor v = transpose(seeded_randn({2, 6, 3, 7}, 3), 1, 2);
  Tensor scores = div(matmul(q, transpose(k, 2, 3)), 2.0);  // sqrt(E) = 2
  Tensor expected = matmul(softmax(scores, -1), v);
  Tensor out = scaled_dot_product_attention(q, k, v);
  CHECK(out.sizes() == Shape{2, 3, 5, 7});
  CHECK(max_abs_diff(out, expected) < 1e-14);
  // causal with L = 5 < S = 6: top-left aligned, query i sees keys 0..i
  std::vector<double> future;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 6; ++j) future.push_back(j > i ? 1.0 : 0.0);
  Tensor mask = from_vector(future, {5, 6}, kBool);
  Tensor causal_expected = matmul(softmax(masked_fill(scores, mask, -std::numeric_limits<double>::infinity()), -1), v);
  CHECK(max_abs_diff(scaled_dot_product_attention(q, k, v, true), causal_expected) < 1e-14);
  // query 0 attends to key 0 alone: its output is v[..., 0, :]
  CHECK(max_abs_diff(slice(scaled_dot_product_attention(q, k, v, true), 2, 0, 1), slice(v, 2, 0, 1)) < 1e-14);
}

TEST_CASE("sdpa decomposes: a dispatch mode sees bmm, softmax and the rest, never sdpa", "[attention]") {
  Tensor q = seeded_randn({2, 3, 4, 8}, 4).requires_grad_(true);
  Tensor k = seeded_randn({2, 3, 4, 8}, 5).requires_grad_(true);
  Tensor v = seeded_randn({2, 3, 4, 8}, 6).requires_grad_(true);
  Generator gen(7);
  auto counter = std::make_shared<OpCounter>();
  {
    DispatchModeGuard guard(counter);
    Tensor out = scaled_dot_product_attention(q, k, v, true, 0.25, &gen);
    sum(out).backward();
  }
  CHECK(counter->count("aten::scaled_dot_product_attention") == 0);
  CHECK(counter->count("aten::matmul") == 0);
  CHECK(counter->count("aten::dropout") == 0);
  CHECK(counter->count("aten::bmm") >= 2);
  // nanoGPT's attention, op for op: the causal mask by ones and triu, then masked_fill and softmax
  // (what PyTorch's GPT runs, so that a plan names the same calls on both sides)
  CHECK(counter->count("aten::_masked_softmax") == 0);
  CHECK(counter->count("aten::_softmax") == 1);
  CHECK(counter->count("aten::mul.Scalar") >= 1);
  CHECK(counter->count("aten::ones") == 1);
  CHECK(counter->count("aten::triu") == 1);
  CHECK(counter->count("aten::masked_fill") >= 1);  // forward, and the gradient's
  CHECK(counter->count("aten::native_dropout") == 1);
  CHECK(counter->count("aten::_masked_softmax_backward") == 0);
  CHECK(counter->count("aten::_softmax_backward_data") == 1);
  CHECK(counter->count("aten::native_dropout_backward") == 1);
  CHECK(q.grad().defined());
  CHECK(k.grad().defined());
  CHECK(v.grad().defined());
}

TEST_CASE("sdpa saves the minimum: q, k^T, attention weights, v (+ mask, + dropout mask)", "[attention]") {
  Tensor q = seeded_randn({2, 3, 4, 8}, 8).requires_grad_(true);
  Tensor k = seeded_randn({2, 3, 5, 8}, 9).requires_grad_(true);
  Tensor v = seeded_randn({2, 3, 5, 8}, 10).requires_grad_(true);
  Generator gen(11);
  {
    PackCounter c;
    scaled_dot_product_attention(q, k, v);
    CHECK(c.packs == 5);  // bmm: q, k^T; softmax: its result; bmm: attn, v
  }
  {
    PackCounter c;
    scaled_dot_product_attention(q, k, v, true);
    CHECK(c.packs == 6);  // + the [L, S] causal mask
  }
  {
    PackCounter c;
    scaled_dot_product_attention(q, k, v, true, 0.1, &gen);
    CHECK(c.packs == 7);  // + the dropout mask
  }
}

TEST_CASE("sdpa gradcheck on strided inputs, causal or not", "[attention][gradcheck]") {
  Tensor q = grad_input({1, 3, 2, 4}, 12), k = grad_input({1, 4, 2, 4}, 13), v = grad_input({1, 4, 2, 3}, 14);
  for (bool causal : {false, true}) {
    auto fn = [causal](const TL& in) {
      return TL{
          scaled_dot_product_attention(transpose(in[0], 1, 2), transpose(in[1], 1, 2), transpose(in[2], 1, 2), causal)};
    };
    CHECK(autograd::gradcheck(fn, {q, k, v}));
  }
}

TEST_CASE("sdpa dropout draws from the given generator, one offset per call", "[attention][dropout]") {
  Tensor q = seeded_randn({2, 4, 8}, 15), k = seeded_randn({2, 6, 8}, 16), v = seeded_randn({2, 6, 5}, 17);
  Generator gen(18);
  RngState s = gen.get_state();
  Tensor out = scaled_dot_product_attention(q, k, v, false, 0.3, &gen);
  CHECK(gen.offset() == s.offset + 1);
  gen.set_state(s);
  Tensor again = scaled_dot_product_attention(q, k, v, false, 0.3, &gen);
  CHECK(equal(out, again));
  // The same as the definition with the same draw
  gen.set_state(s);
  Tensor attn = softmax(mul(matmul(q, transpose(k, 1, 2)), 1.0 / std::sqrt(8.0)), -1);
  Tensor expected = matmul(dropout(attn, 0.3, true, &gen), v);
  CHECK(max_abs_diff(out, expected) < 1e-12);
  // p = 0 draws nothing
  scaled_dot_product_attention(q, k, v, false, 0.0, &gen);
  CHECK(gen.offset() == s.offset + 1);
  // gradcheck through dropout with a fixed draw
  auto fn = [&](const TL& in) {
    gen.set_state(s);
    return TL{scaled_dot_product_attention(in[0], in[1], in[2], true, 0.5, &gen)};
  };
  CHECK(autograd::gradcheck(fn, {grad_input({1, 3, 4}, 19), grad_input({1, 3, 4}, 20), grad_input({1, 3, 2}, 21)}));
}

TEST_CASE("sdpa in BFloat16 is within tolerance of float32", "[attention][bf16]") {
  Tensor q = seeded_randn({2, 8, 16}, 22, kFloat), k = seeded_randn({2, 8, 16}, 23, kFloat);
  Tensor v = seeded_randn({2, 8, 16}, 24, kFloat);
  Tensor ref = scaled_dot_product_attention(q.to(kBFloat16).to(kFloat), k.to(kBFloat16).to(kFloat),
                                            v.to(kBFloat16).to(kFloat), true);
  Tensor out = scaled_dot_product_attention(q.to(kBFloat16), k.to(kBFloat16), v.to(kBFloat16), true);
  CHECK(out.dtype() == kBFloat16);
  // Scores, weights and output are each rounded to bfloat16 once.
  CHECK(remat::testing::all_close(out.to(kFloat), ref, 3e-2, 3e-2));
}

TEST_CASE("sdpa on Meta infers the shape and allocates nothing", "[attention][meta]") {
  int64_t before = memory_allocated();
  Tensor q = meta_empty({2, 4, 6, 8}), k = meta_empty({2, 4, 9, 8}), v = meta_empty({2, 4, 9, 5});
  Generator gen(25);
  Tensor out = scaled_dot_product_attention(q, k, v, true, 0.1, &gen);
  CHECK(out.is_meta());
  CHECK(out.sizes() == Shape{2, 4, 6, 5});
  CHECK(out.dtype() == kFloat);
  CHECK(gen.offset() == 1);
  CHECK(memory_allocated() == before);
}

TEST_CASE("sdpa errors name the op and the values", "[attention][errors]") {
  Tensor q = ones({2, 3, 4}), k = ones({2, 5, 4}), v = ones({2, 5, 6});
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, ones({2, 5, 3}), v),
                      Contains("aten::scaled_dot_product_attention: query and key must have the same embedding dim E, "
                               "but got [2, 3, 4] and [2, 5, 3]"));
  REQUIRE_THROWS_WITH(
      scaled_dot_product_attention(q, k, ones({2, 4, 6})),
      Contains("aten::scaled_dot_product_attention: key and value must have the same sequence length S, "
               "but got [2, 5, 4] and [2, 4, 6]"));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k.to(kDouble), v),
                      Contains("aten::scaled_dot_product_attention: Expected query, key, and value to have the same "
                               "dtype, but got query.dtype: Float key.dtype: Double and value.dtype: Float instead."));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(ones({4}), ones({4}), ones({4})),
                      Contains("aten::scaled_dot_product_attention: expected query, key and value to be at least 2-D"));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k, v, false, 1.5),
                      Contains("aten::scaled_dot_product_attention: dropout probability has to be between 0 and 1, but "
                               "got 1.5"));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(ones({2, 3}, kLong), ones({2, 3}, kLong), ones({2, 3}, kLong)),
                      Contains("aten::scaled_dot_product_attention: expected 'query' to have a floating point dtype"));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, meta_empty({2, 5, 4}), v),
                      Contains("aten::scaled_dot_product_attention: Expected all tensors to be on the same device"));
}

TEST_CASE("sdpa picks its backend as sdpa_kernel says: math by default, the fused op under FLASH_ATTENTION",
          "[attention][sdpa_kernel]") {
  Tensor q = seeded_randn({2, 3, 8, 4}, 26, kFloat).requires_grad_(true);
  Tensor k = seeded_randn({2, 3, 8, 4}, 27, kFloat).requires_grad_(true);
  Tensor v = seeded_randn({2, 3, 8, 4}, 28, kFloat).requires_grad_(true);
  const char* flash = "aten::_scaled_dot_product_flash_attention_for_cpu";
  auto calls = [&](std::optional<std::vector<SDPBackend>> backends, double dropout_p) {
    std::optional<sdpa_kernel> guard;
    if (backends) guard.emplace(*backends);
    auto counter = std::make_shared<OpCounter>();
    DispatchModeGuard mode(counter);
    Generator gen(29);
    sum(scaled_dot_product_attention(q, k, v, true, dropout_p, &gen)).backward();
    return counter;
  };
  auto math = calls(std::nullopt, 0.0);
  CHECK(math->count(flash) == 0);
  CHECK(math->count("aten::_softmax") == 1);
  auto fused = calls(std::vector<SDPBackend>{SDPBackend::FLASH_ATTENTION}, 0.0);
  CHECK(fused->count(flash) == 1);
  CHECK(fused->count("aten::_scaled_dot_product_flash_attention_for_cpu_backward") == 1);
  CHECK(fused->count("aten::bmm") == 0);
  CHECK(fused->count("aten::_softmax") == 0);
  // both enabled: the fused op where it can run, the math path where it cannot (dropout)
  auto both = std::vector<SDPBackend>{SDPBackend::MATH, SDPBackend::FLASH_ATTENTION};
  CHECK(calls(both, 0.0)->count(flash) == 1);
  auto with_dropout = calls(both, 0.2);
  CHECK(with_dropout->count(flash) == 0);
  CHECK(with_dropout->count("aten::native_dropout") == 1);
  // the guard is scoped
  CHECK(enabled_sdpa_backends() == std::vector<SDPBackend>{SDPBackend::MATH});
}

TEST_CASE("sdpa with only FLASH_ATTENTION enabled and arguments it cannot run says why", "[attention][errors]") {
  sdpa_kernel guard(SDPBackend::FLASH_ATTENTION);
  Tensor q = ones({2, 3, 4}), k = ones({2, 5, 4}), v = ones({2, 5, 4});
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q, k, v),
                      Contains("aten::scaled_dot_product_attention: No available kernel. Aborting execution. "
                               "FLASH_ATTENTION is the only backend enabled (sdpa_kernel) and cannot run these "
                               "arguments: it needs 4-D [B, H, L, E] inputs, got [2, 3, 4], [2, 5, 4] and [2, 5, 4]"));
  Tensor q4 = ones({1, 2, 3, 4}), k4 = ones({1, 2, 5, 4});
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q4, k4, k4, false, 0.1),
                      Contains("cannot run these arguments: it has no dropout, got dropout_p = 0.1"));
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(q4, k4, ones({1, 2, 5, 6})),
                      Contains("cannot run these arguments: it needs equal B, H and head sizes, got [1, 2, 3, 4], "
                               "[1, 2, 5, 4] and [1, 2, 5, 6]"));
  Tensor strided = slice(ones({1, 2, 3, 8}), 3, 0, 8, 2);
  REQUIRE_THROWS_WITH(scaled_dot_product_attention(strided, k4, k4),
                      Contains("cannot run these arguments: it needs a unit-stride head dim, got strides [48, 24, 8, 2]"));
}
