// Tests ops/flash_attention.cpp: the fused attention op against the math path (values, row
// log-sum-exp, gradients), gradcheck in float64, bfloat16, the Meta dry run, what it saves, SAC
// keeping it, and its errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::all_close;
using remat::testing::grad_input;
using remat::testing::max_abs_diff;
using remat::testing::meta_empty;
using remat::testing::OpCounter;
using remat::testing::PackCounter;
using remat::testing::seeded_randn;
using TL = std::vector<Tensor>;

namespace {

const char* kFlash = "aten::_scaled_dot_product_flash_attention_for_cpu";
const char* kFlashBackward = "aten::_scaled_dot_product_flash_attention_for_cpu_backward";

Tensor flash(const Tensor& q, const Tensor& k, const Tensor& v, bool causal) {
  return std::get<0>(_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal));
}

// q, k, v as the GPT makes them: [B, H, T, E] views of one [B, T, 3, H, E] projection.
TL qkv_views(int64_t B, int64_t H, int64_t T, int64_t E, uint64_t seed, ScalarType dtype) {
  std::vector<Tensor> heads = unbind(seeded_randn({B, T, 3, H, E}, seed, dtype), 2);
  return {heads[0].transpose(1, 2), heads[1].transpose(1, 2), heads[2].transpose(1, 2)};
}

// The row log-sum-exp of scale * q k^T (+ the causal mask), computed in float64 from the definition.
Tensor reference_logsumexp(const Tensor& q, const Tensor& k, bool causal) {
  Tensor qd = q.to(kDouble), kd = k.to(kDouble);
  const int64_t L = q.size(-2), S = k.size(-2);
  Tensor s = mul(matmul(qd, transpose(kd, -2, -1)), 1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  if (causal) {
    Tensor future = triu(ones({L, S}, TensorOptions().dtype(kBool)), 1);
    s = masked_fill(s, future, -std::numeric_limits<double>::infinity());
  }
  Tensor m = amax(s, -1, true);
  return add(squeeze(m, -1), log(sum(exp(sub(s, m)), {-1})));
}

}  // namespace

// float32: the fused kernel sums the same products in another order (blocked GEMMs, the 1/sum
// applied after P v instead of before). Each output element is a convex combination of v's
// entries (|v| < ~5) computed with relative rounding ~1e-7 per operation over at most a few hundred
// terms, so |difference| stays below 1e-5; the log-sum-exp (|lse| ~ 5) likewise.
TEST_CASE("flash attention equals the math path: causal or not, L != S, several key chunks", "[flash]") {
  struct Case {
    int64_t B, H, L, S, E;
  };
  // 37 x 53: one query block tail; 200 x 600: query blocks of 64 and two key chunks (512 + 88),
  // which exercises the online softmax's rescaling.
  for (Case c : {Case{2, 3, 37, 53, 16}, Case{1, 2, 200, 600, 8}, Case{2, 2, 64, 64, 32}}) {
    for (bool causal : {false, true}) {
      INFO("L " << c.L << " S " << c.S << " causal " << causal);
      Tensor q = seeded_randn({c.B, c.H, c.L, c.E}, 1, kFloat);
      Tensor k = seeded_randn({c.B, c.H, c.S, c.E}, 2, kFloat), v = seeded_randn({c.B, c.H, c.S, c.E}, 3, kFloat);
      auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal);
      CHECK(out.sizes() == Shape{c.B, c.H, c.L, c.E});
      CHECK(lse.sizes() == Shape{c.B, c.H, c.L});
      CHECK(lse.dtype() == kFloat);
      Tensor math = scaled_dot_product_attention(q, k, v, causal);
      CHECK(max_abs_diff(out, math) < 1e-5);
      CHECK(max_abs_diff(lse, reference_logsumexp(q, k, causal)) < 1e-5);
    }
  }
}

TEST_CASE("flash attention reads strided views in place and returns PyTorch's layouts", "[flash]") {
  TL in = qkv_views(2, 4, 40, 8, 4, kFloat);
  REQUIRE_FALSE(in[0].is_contiguous());
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(in[0], in[1], in[2], 0.0, true);
  CHECK(max_abs_diff(out, scaled_dot_product_attention(in[0], in[1], in[2], true)) < 1e-5);
  // output: [B, L, H, E] in memory, so that its heads-side-by-side transpose is contiguous
  CHECK(out.strides() == Shape{40 * 4 * 8, 8, 4 * 8, 1});
  CHECK(out.transpose(1, 2).is_contiguous());
  // logsumexp: [B, L, H] in memory, returned as [B, H, L]
  CHECK(lse.strides() == Shape{40 * 4, 1, 4});
  // a head dim with stride 2 is copied first, with the same result
  Tensor wide = seeded_randn({2, 4, 40, 16}, 5, kFloat);
  Tensor q2 = slice(wide, 3, 0, 16, 2);
  REQUIRE(q2.strides().back() == 2);
  CHECK(max_abs_diff(flash(q2, in[1], in[2], false), scaled_dot_product_attention(q2, in[1], in[2])) < 1e-5);
}

TEST_CASE("flash attention in float64: matches the math path to rounding, and gradcheck", "[flash][gradcheck]") {
  TL in = qkv_views(2, 2, 9, 4, 6, kDouble);
  for (bool causal : {false, true}) {
    // float64 rounding (1e-16 relative) over sums of 9 terms of values below ~10
    Tensor math = scaled_dot_product_attention(in[0], in[1], in[2], causal);
    CHECK(max_abs_diff(flash(in[0], in[1], in[2], causal), math) < 1e-13);
    auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(in[0], in[1], in[2], 0.0, causal);
    CHECK(lse.dtype() == kDouble);
  }
  // L = 3 != S = 5, transposed (strided) inputs, causal or not, and an explicit scale
  Tensor q = grad_input({1, 3, 2, 4}, 7), k = grad_input({1, 5, 2, 4}, 8), v = grad_input({1, 5, 2, 4}, 9);
  for (bool causal : {false, true}) {
    auto fn = [causal](const TL& x) {
      return TL{flash(transpose(x[0], 1, 2), transpose(x[1], 1, 2), transpose(x[2], 1, 2), causal)};
    };
    CHECK(autograd::gradcheck(fn, {q, k, v}));
  }
  auto scaled = [](const TL& x) {
    return TL{std::get<0>(_scaled_dot_product_flash_attention_for_cpu(x[0], x[1], x[2], 0.0, true, {}, 0.3))};
  };
  CHECK(autograd::gradcheck(scaled, {grad_input({1, 2, 4, 3}, 10), grad_input({1, 2, 6, 3}, 11),
                                     grad_input({1, 2, 6, 3}, 12)}));
}

// float32 gradients: the same argument as the forward's tolerance, over the products of backward
// (a few hundred terms each for the key and value gradients).
TEST_CASE("flash attention's float32 gradients match the math path's", "[flash]") {
  for (bool causal : {false, true}) {
    INFO("causal " << causal);
    TL grads[2];
    for (int path = 0; path < 2; ++path) {
      Tensor base = seeded_randn({2, 70, 3, 2, 16}, 13, kFloat).requires_grad_(true);
      std::vector<Tensor> heads = unbind(base, 2);
      Tensor q = heads[0].transpose(1, 2), k = heads[1].transpose(1, 2), v = heads[2].transpose(1, 2);
      Tensor out = path == 0 ? flash(q, k, v, causal) : scaled_dot_product_attention(q, k, v, causal);
      Tensor w = seeded_randn(out.sizes(), 14, kFloat);
      sum(mul(out, w)).backward();
      grads[path] = {base.grad()};
    }
    CHECK(max_abs_diff(grads[0][0], grads[1][0]) < 2e-5);
  }
}

TEST_CASE("flash attention in BFloat16 is within tolerance of float32", "[flash][bf16]") {
  TL in = qkv_views(2, 2, 48, 16, 15, kFloat);
  TL rounded, bf;
  for (const Tensor& t : in) {
    bf.push_back(t.to(kBFloat16));
    rounded.push_back(t.to(kBFloat16).to(kFloat));
  }
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(bf[0], bf[1], bf[2], 0.0, true);
  CHECK(out.dtype() == kBFloat16);
  CHECK(lse.dtype() == kFloat);
  // Products accumulate in float from the rounded inputs: only the output's rounding to bf16 (2^-8
  // relative) differs from float32 on the same inputs.
  CHECK(all_close(out.to(kFloat), flash(rounded[0], rounded[1], rounded[2], true), 1e-2, 1e-2));
  CHECK(max_abs_diff(lse, std::get<1>(_scaled_dot_product_flash_attention_for_cpu(rounded[0], rounded[1], rounded[2],
                                                                                  0.0, true))) < 1e-5);
  // gradients: each rounded to bf16 once, from float accumulators
  TL g16, g32;
  for (int path = 0; path < 2; ++path) {
    TL leaves;
    for (const Tensor& t : (path == 0 ? bf : rounded)) leaves.push_back(t.detach().requires_grad_(true));
    Tensor o = flash(leaves[0], leaves[1], leaves[2], true);
    sum(mul(o, ones_like(o))).backward();
    for (const Tensor& l : leaves) (path == 0 ? g16 : g32).push_back(l.grad());
  }
  for (size_t i = 0; i < 3; ++i) {
    CHECK(g16[i].dtype() == kBFloat16);
    CHECK(all_close(g16[i].to(kFloat), g32[i], 2e-2, 2e-2));
  }
}

TEST_CASE("flash attention saves query, key, value, output and logsumexp, nothing [L, S]", "[flash]") {
  TL in = qkv_views(1, 2, 6, 4, 16, kFloat);
  Tensor base_q = in[0].detach().requires_grad_(true);
  {
    PackCounter c;
    flash(base_q, in[1], in[2], true);
    CHECK(c.packs == 5);
  }
  {
    PackCounter c;
    flash(in[0], in[1], in[2], true);  // nothing requires grad: nothing saved
    CHECK(c.packs == 0);
  }
  // logsumexp is not differentiable
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(base_q, in[1], in[2], 0.0, true);
  CHECK(out.requires_grad());
  CHECK_FALSE(lse.requires_grad());
}

TEST_CASE("flash attention on Meta allocates what the CPU allocates, allocation by allocation", "[flash][meta]") {
  // a strided q (copied before the kernel) and a causal forward + backward
  auto step = [](Device device) {
    TensorOptions o = TensorOptions().device(device);
    Tensor wide = empty({2, 3, 20, 16}, o), kv = empty({2, 3, 2, 24, 8}, o);
    if (!device.is_meta()) {
      Generator gen(17);
      normal_(wide, 0, 1, &gen);
      normal_(kv, 0, 1, &gen);
    }
    Tensor q = slice(wide, 3, 0, 16, 2).detach().requires_grad_(true);
    Tensor k = select(kv, 2, 0).detach().requires_grad_(true), v = select(kv, 2, 1).detach().requires_grad_(true);
    reset_peak_memory_stats(device);
    const int64_t start = memory_allocated(device);
    MemoryTracker tracker(device);
    Tensor out = flash(q, k, v, true);
    autograd::backward({out}, {ones_like(out)});
    return std::make_pair(tracker.allocation_sizes(), max_memory_allocated(device) - start);
  };
  auto [cpu_sizes, cpu_peak] = step(Device{kCPU});
  auto [meta_sizes, meta_peak] = step(Device{kMeta});
  CHECK(cpu_sizes == meta_sizes);
  CHECK(cpu_peak == meta_peak);
  CHECK(cpu_peak > 0);
}

TEST_CASE("SAC keeping the fused op replays both outputs: bitwise-equal gradients, no rerun of it", "[flash][sac]") {
  auto run = [](bool checkpointed) {
    TL in = qkv_views(2, 2, 24, 8, 18, kFloat);
    TL leaves;
    for (const Tensor& t : in) leaves.push_back(t.detach().requires_grad_(true));
    auto fn = [](const TL& x) { return TL{mul(exp(flash(cos(x[0]), x[1], x[2], true)), 2.0)}; };
    CheckpointOptions o;
    o.context_fn = [] { return create_selective_checkpoint_contexts({kFlash}); };
    Tensor out = checkpointed ? checkpoint(fn, leaves, o)[0] : fn(leaves)[0];
    auto counter = std::make_shared<OpCounter>();
    {
      DispatchModeGuard guard(counter);
      sum(out).backward();
    }
    if (checkpointed) {
      CHECK(counter->count(kFlash) == 0);  // replayed from the cache (output and logsumexp), not rerun
      CHECK(counter->count("aten::cos") == 1);  // the region was rerun for cos's output
    }
    CHECK(counter->count(kFlashBackward) == 1);
    TL grads;
    for (const Tensor& l : leaves) grads.push_back(l.grad());
    return grads;
  };
  TL plain = run(false), sac = run(true);
  for (size_t i = 0; i < 3; ++i) {
    INFO("input " << i << " max diff " << max_abs_diff(plain[i], sac[i]));
    CHECK(equal(plain[i], sac[i]));
  }
}

TEST_CASE("flash attention errors name the op and the values", "[flash][errors]") {
  Tensor q = ones({1, 2, 3, 4}), k = ones({1, 2, 5, 4}), v = ones({1, 2, 5, 4});
  REQUIRE_THROWS_WITH(_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.1),
                      Contains("aten::_scaled_dot_product_flash_attention_for_cpu: dropout_p = 0.1 is not supported "
                               "by remat's fused attention"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, ones({3, 5})),
                      Contains("aten::_scaled_dot_product_flash_attention_for_cpu: an explicit attn_mask (got shape "
                               "[3, 5]) is not supported"));
  REQUIRE_THROWS_WITH(flash(ones({2, 3, 4}), ones({2, 5, 4}), ones({2, 5, 4}), false),
                      Contains("aten::_scaled_dot_product_flash_attention_for_cpu: expected query, key and value to be "
                               "4-D ([B, H, L, E]), but got shapes [2, 3, 4], [2, 5, 4] and [2, 5, 4]"));
  REQUIRE_THROWS_WITH(flash(q, k, ones({1, 2, 5, 6}), false),
                      Contains("key and value must have the same shape [B, H, S, E], but got [1, 2, 5, 4] and "
                               "[1, 2, 5, 6]"));
  REQUIRE_THROWS_WITH(flash(q, ones({1, 3, 5, 4}), ones({1, 3, 5, 4}), false),
                      Contains("query [B, H, L, E] and key [B, H, S, E] must agree in B, H and E (Q/K/V should have "
                               "the same head size), but got [1, 2, 3, 4] and [1, 3, 5, 4]"));
  REQUIRE_THROWS_WITH(flash(q, k.to(kDouble), v, false),
                      Contains("Expected query, key, and value to have the same dtype, but got query.dtype: Float "
                               "key.dtype: Double and value.dtype: Float instead."));
  REQUIRE_THROWS_WITH(flash(ones({1, 2, 3, 4}, kLong), ones({1, 2, 5, 4}, kLong), ones({1, 2, 5, 4}, kLong), false),
                      Contains("aten::_scaled_dot_product_flash_attention_for_cpu: expected 'query' to have a floating "
                               "point dtype"));
  REQUIRE_THROWS_WITH(flash(q, meta_empty({1, 2, 5, 4}), v, false),
                      Contains("aten::_scaled_dot_product_flash_attention_for_cpu: Expected all tensors to be on the "
                               "same device"));
  REQUIRE_THROWS_WITH(flash(Tensor(), k, v, false),
                      Contains("aten::_scaled_dot_product_flash_attention_for_cpu: argument 'query' is an undefined "
                               "tensor"));

  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v);
  REQUIRE_THROWS_WITH(_scaled_dot_product_flash_attention_for_cpu_backward(ones({1, 2, 3, 5}), q, k, v, out, lse, 0.0,
                                                                           false),
                      Contains("aten::_scaled_dot_product_flash_attention_for_cpu_backward: grad_out and out must have "
                               "query's shape [1, 2, 3, 4], but got [1, 2, 3, 5] and [1, 2, 3, 4]"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_flash_attention_for_cpu_backward(ones_like(out).to(kDouble), q, k, v, out,
                                                                           lse, 0.0, false),
                      Contains("grad_out and out must have query's dtype Float, but got Double and Float"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_flash_attention_for_cpu_backward(ones_like(out), q, k, v, out,
                                                                           lse.to(kDouble), 0.0, false),
                      Contains("aten::_scaled_dot_product_flash_attention_for_cpu_backward: expected logsumexp of "
                               "shape [1, 2, 3] and dtype Float, but got [1, 2, 3] Double"));
  REQUIRE_THROWS_WITH(_scaled_dot_product_flash_attention_for_cpu_backward(ones_like(out), q, k, v, out, lse, 0.5,
                                                                           false),
                      Contains("aten::_scaled_dot_product_flash_attention_for_cpu_backward: dropout_p = 0.5 is not "
                               "supported"));

  // double backward (create_graph through the fused op) is not supported, as in PyTorch
  Tensor ql = q.detach().requires_grad_(true);
  Tensor y = sum(mul(flash(ql, k, v, true), flash(ql, k, v, true)));
  TL g = autograd::grad({y}, {ql}, {}, /*retain_graph=*/false, /*create_graph=*/true);
  REQUIRE(g[0].requires_grad());
  REQUIRE_THROWS_WITH(sum(g[0]).backward(),
                      Contains("the derivative for 'aten::_scaled_dot_product_flash_attention_for_cpu_backward' is not "
                               "implemented."));
}
