// Tests nn/llama.cpp: torchtitan's configurations and names; apply_rotary_emb and repeat_kv
// against their definitions and under gradcheck; training reduces the loss; checkpointing
// strategies give bitwise-identical gradients; a step on Meta is an exact dry run of the CPU's;
// errors.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <set>
#include <complex>
#include <string>

#include "engine/core/dry_run.h"
#include "engine/core/memory_tracker.h"
#include "remat.h"
#include "tests/testing/block_calls.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;
using remat::testing::grad_input;
using remat::testing::seeded_randn;

namespace {

// A small Llama with grouped-query attention (4 query heads over 2 kv heads).
nn::LlamaConfig small_config(TensorOptions options = {}) {
  nn::LlamaConfig c;
  c.dim = 32;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.vocab_size = 19;
  c.multiple_of = 16;
  c.rope_theta = 500000;
  c.max_seq_len = 16;
  c.seed = 7;
  c.options = options;
  return c;
}

Tensor tokens(int64_t B, int64_t T, int64_t vocab, uint64_t seed, Device device = Device{kCPU}) {
  std::vector<double> v;
  uint64_t s = seed;
  for (int64_t i = 0; i < B * T; ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v.push_back(static_cast<double>((s >> 33) % static_cast<uint64_t>(vocab)));
  }
  return from_vector(v, {B, T}, TensorOptions().dtype(kLong).device(device));
}

struct Run {
  Tensor loss;
  std::vector<std::pair<std::string, Tensor>> grads;
};

Run run(const nn::ActivationCheckpointing& ac) {
  nn::Llama model(small_config());
  model.set_checkpointing(ac);
  nn::LlamaOutput out = model.forward(tokens(2, 12, 19, 1), tokens(2, 12, 19, 2));
  out.loss.backward();
  Run r;
  r.loss = out.loss.detach();
  for (const auto& [name, p] : model.named_parameters()) r.grads.emplace_back(name, p.grad());
  return r;
}

}  // namespace

TEST_CASE("Llama configurations are torchtitan's", "[llama]") {
  nn::LlamaConfig debug = nn::LlamaConfig::named("debugmodel");
  CHECK(debug.dim == 256);
  CHECK(debug.n_layers == 6);
  CHECK(debug.kv_heads() == 16);
  CHECK(debug.head_dim() == 16);
  CHECK(debug.ffn_hidden_dim() == 768);  // int(2 * 1024 / 3) = 682, rounded up to a multiple of 256
  nn::LlamaConfig big = nn::LlamaConfig::named("llama3_8b");
  CHECK(big.ffn_hidden_dim() == 14336);  // int(1.3 * 10922) = 14198, rounded up to a multiple of 1024
  CHECK(big.kv_heads() == 8);
  CHECK(big.head_dim() == 128);
  CHECK(big.vocab_size == 128256);
  nn::LlamaConfig given = debug;
  given.ffn_hidden = 100;  // as given, whatever multiple_of says
  CHECK(given.ffn_hidden_dim() == 100);
  CHECK(big.rope_theta == 500000);
  CHECK(big.norm_eps == 1e-5);
  REQUIRE_THROWS_WITH(nn::LlamaConfig::named("llama2"),
                      Contains("LlamaConfig::named: unknown configuration 'llama2' (debugmodel or llama3_8b)"));
}

TEST_CASE("Llama 3 8B has 8.03 billion parameters (built on Meta)", "[llama]") {
  nn::LlamaConfig c = nn::LlamaConfig::llama3_8b();
  c.options = TensorOptions().device(Device{kMeta});
  nn::Llama model(c);
  CHECK(model.num_parameters() == 8030261248);
}

TEST_CASE("Llama's names are torchtitan's", "[llama]") {
  nn::Llama model(small_config());
  std::vector<std::string> names;
  for (const auto& [name, p] : model.named_parameters()) names.push_back(name);
  for (const char* n : {"tok_embeddings.weight", "layers.0.attention.wq.weight", "layers.0.attention.wk.weight",
                        "layers.0.attention.wv.weight", "layers.0.attention.wo.weight",
                        "layers.2.feed_forward.w1.weight", "layers.2.feed_forward.w2.weight",
                        "layers.2.feed_forward.w3.weight", "layers.1.attention_norm.weight", "layers.1.ffn_norm.weight",
                        "norm.weight", "output.weight"}) {
    INFO(n);
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
  }
  CHECK(names.size() == 1 + 3 * 9 + 2);  // no biases
  CHECK(model.blocks[0]->attention->wk->weight.sizes() == Shape{16, 32});  // 2 kv heads of 8
  CHECK(model.blocks[0]->feed_forward->w1->weight.sizes() == Shape{96, 32});  // int(256 / 3) = 85 -> 96
}

TEST_CASE("apply_rotary_emb rotates consecutive pairs as complex numbers", "[llama][rope]") {
  const int64_t T = 5, half = 3;
  Tensor freqs = nn::precompute_freqs_cis(2 * half, 8, 10000.0, false, TensorOptions().dtype(kDouble));
  CHECK(freqs.sizes() == Shape{8, half});
  CHECK(freqs.dtype() == kComplexDouble);
  Tensor x = seeded_randn({2, T, 4, 2 * half}, 3);
  Tensor y = nn::apply_rotary_emb(x, freqs);
  REQUIRE(y.sizes() == x.sizes());
  std::vector<double> xv = x.to_vector(), yv = y.to_vector();
  double worst = 0;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t i = 0; i < half; ++i) {
          const size_t at = static_cast<size_t>((((b * T + t) * 4 + h) * half + i) * 2);
          const double freq = 1.0 / std::pow(10000.0, 2.0 * static_cast<double>(i) / (2.0 * half));
          std::complex<double> z = std::complex<double>(xv[at], xv[at + 1]) *
                                   std::polar(1.0, static_cast<double>(t) * freq);
          worst = std::max({worst, std::abs(z.real() - yv[at]), std::abs(z.imag() - yv[at + 1])});
        }
  CHECK(worst < 1e-14);
  // bf16 in, bf16 out (computed in f32: complex64)
  Tensor freqs32 = nn::precompute_freqs_cis(2 * half, 8, 10000.0, false);
  CHECK(freqs32.dtype() == kComplexFloat);
  CHECK(nn::apply_rotary_emb(x.to(kBFloat16), freqs32).dtype() == kBFloat16);
  // the table's parts are precompute_freqs_cos_sin's
  auto [cos_t, sin_t] = nn::precompute_freqs_cos_sin(2 * half, 8, 10000.0, false, TensorOptions().dtype(kDouble));
  CHECK(equal(view_as_real(freqs).select(2, 0), cos_t));
  CHECK(equal(view_as_real(freqs).select(2, 1), sin_t));
}

TEST_CASE("Llama 3.1's rope scaling divides the low frequencies by 8 and keeps the high ones", "[llama][rope]") {
  // head_dim 128, theta 500000: pair 0 (wavelength 2 pi) is kept, pair 63 (wavelength > 8192) scaled.
  auto [c0, s0] = nn::precompute_freqs_cos_sin(128, 2, 500000.0, false, TensorOptions().dtype(kDouble));
  auto [c1, s1] = nn::precompute_freqs_cos_sin(128, 2, 500000.0, true, TensorOptions().dtype(kDouble));
  auto angle = [](const Tensor& c, const Tensor& s, int64_t i) {
    return std::atan2(s.to_vector()[static_cast<size_t>(64 + i)], c.to_vector()[static_cast<size_t>(64 + i)]);
  };
  CHECK(angle(c1, s1, 0) == Approx(angle(c0, s0, 0)).epsilon(1e-12));
  CHECK(angle(c1, s1, 63) == Approx(angle(c0, s0, 63) / 8).epsilon(1e-12));
  CHECK(c1.dtype() == kDouble);
  CHECK(nn::precompute_freqs_cos_sin(128, 2, 500000.0, true).first.dtype() == kFloat);
}

TEST_CASE("repeat_kv repeats each kv head n_rep times in place (repeat_interleave)", "[llama]") {
  Tensor x = seeded_randn({2, 3, 2, 4}, 5);
  Tensor y = nn::repeat_kv(x, 3);
  REQUIRE(y.sizes() == Shape{2, 3, 6, 4});
  for (int64_t h = 0; h < 6; ++h) CHECK(equal(y.select(2, h), x.select(2, h / 3)));
  CHECK(nn::repeat_kv(x, 1).is_same(x));
}

TEST_CASE("gradcheck: apply_rotary_emb and repeat_kv", "[llama][gradcheck]") {
  Tensor freqs = nn::precompute_freqs_cis(6, 8, 10000.0, true, TensorOptions().dtype(kDouble));
  CHECK(autograd::gradcheck([&](const std::vector<Tensor>& v) {
    return std::vector<Tensor>{nn::apply_rotary_emb(v[0], freqs)};
  },
                            {grad_input({2, 4, 3, 6}, 11)}));
  CHECK(autograd::gradcheck([](const std::vector<Tensor>& v) { return std::vector<Tensor>{nn::repeat_kv(v[0], 2)}; },
                            {grad_input({2, 3, 2, 4}, 12)}));
}

TEST_CASE("Llama's loss decreases over a few AdamW steps on a fixed batch", "[llama]") {
  nn::Llama model(small_config());
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2));
  Tensor idx = tokens(4, 16, 19, 3), targets = tokens(4, 16, 19, 4);
  std::vector<double> losses;
  for (int step = 0; step < 6; ++step) {
    opt.zero_grad();
    nn::LlamaOutput out = model.forward(idx, targets);
    CHECK(out.logits.sizes() == Shape{4, 16, 19});
    losses.push_back(out.loss.item());
    out.loss.backward();
    opt.step();
  }
  INFO("losses " << ::Catch::Detail::stringify(losses));
  for (size_t i = 1; i < losses.size(); ++i) CHECK(losses[i] < losses[i - 1]);
  CHECK(losses.back() < losses.front() - 0.3);
}

TEST_CASE("Llama trains in bf16 on the CPU: its losses track f32's and decrease", "[llama][bf16]") {
  // The same seed and batch in both dtypes; torchtitan trains Llama 3 in bf16.
  std::vector<double> losses[2];
  for (ScalarType dtype : {kFloat, kBFloat16}) {
    nn::Llama model(small_config(TensorOptions().dtype(dtype)));
    CHECK(model.output->weight.dtype() == dtype);
    CHECK(model.freqs_cis.dtype() == kComplexFloat);  // the rotary table stays complex64, as torchtitan's
    optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2));
    Tensor idx = tokens(4, 16, 19, 3), targets = tokens(4, 16, 19, 4);
    for (int step = 0; step < 6; ++step) {
      opt.zero_grad();
      nn::LlamaOutput out = model.forward(idx, targets);
      CHECK(out.logits.dtype() == dtype);
      losses[dtype == kBFloat16].push_back(out.loss.item());
      out.loss.backward();
      opt.step();
    }
  }
  INFO("f32 " << ::Catch::Detail::stringify(losses[0]) << ", bf16 " << ::Catch::Detail::stringify(losses[1]));
  for (size_t i = 0; i < losses[1].size(); ++i) CHECK(losses[1][i] == Approx(losses[0][i]).epsilon(3e-2));
  CHECK(losses[1].back() < losses[1].front() - 0.3);
}

TEST_CASE("Llama: non-reentrant checkpointing strategies give bitwise identical gradients", "[llama][checkpoint]") {
  Run none = run(nn::ActivationCheckpointing::none());
  auto same = [&](const Run& r) {
    CHECK(equal(none.loss, r.loss));
    REQUIRE(none.grads.size() == r.grads.size());
    for (size_t i = 0; i < r.grads.size(); ++i) {
      INFO(r.grads[i].first);
      REQUIRE(r.grads[i].second.defined());
      CHECK(equal(none.grads[i].second, r.grads[i].second));
    }
  };
  SECTION("full") { same(run(nn::ActivationCheckpointing::full())); }
  SECTION("every_nth(2)") { same(run(nn::ActivationCheckpointing::every_nth(2))); }
  SECTION("selective(save_matmuls)") { same(run(nn::ActivationCheckpointing::selective(policies::save_matmuls()))); }
}

TEST_CASE("Llama: SAC policies see torchtitan's scopes", "[llama][checkpoint]") {
  std::set<std::string> scopes;
  nn::Llama model(small_config());
  model.set_checkpointing(nn::ActivationCheckpointing::selective([&](const SelectiveCheckpointContext& ctx,
                                                                    const OperatorHandle&,
                                                                    const std::vector<IValue>&) {
    scopes.insert(ctx.scope);
    return CheckpointPolicy::PREFER_RECOMPUTE;
  }));
  model.forward(tokens(1, 4, 19, 1), tokens(1, 4, 19, 2)).loss.backward();
  for (const char* s : {"layers.1.attention.wq", "layers.1.attention.inner_attention", "layers.1.feed_forward.w2",
                        "layers.1.feed_forward", "layers.1.attention_norm"}) {
    INFO(s);
    CHECK(scopes.count(s) == 1);
  }
}

TEST_CASE("Llama: the feed-forward runs w1, silu, w3 in torchtitan's order (SAC counts its matmuls alike)",
          "[llama][checkpoint]") {
  // w2(F.silu(w1(x)) * w3(x)) evaluates left to right in Python; torchtitan's SAC policy saves every
  // other mm by its count, so which of w1 and w3 it keeps depends on this order.
  std::vector<std::string> seen;
  nn::Llama model(small_config());
  model.set_checkpointing(nn::ActivationCheckpointing::selective([&](const SelectiveCheckpointContext& ctx,
                                                                    const OperatorHandle& op,
                                                                    const std::vector<IValue>&) {
    if (ctx.scope.rfind("layers.0.feed_forward", 0) == 0) seen.push_back(op.name() + " " + ctx.scope);
    return CheckpointPolicy::PREFER_RECOMPUTE;
  }));
  model.forward(tokens(1, 4, 19, 1), tokens(1, 4, 19, 2)).loss.backward();
  const std::vector<std::string> mms_and_silu = [&] {
    std::vector<std::string> v;
    for (const std::string& s : seen)
      if (s.rfind("aten::mm ", 0) == 0 || s.rfind("aten::silu ", 0) == 0) v.push_back(s);
    return v;
  }();
  CHECK(mms_and_silu == std::vector<std::string>{"aten::mm layers.0.feed_forward.w1", "aten::silu layers.0.feed_forward",
                                                  "aten::mm layers.0.feed_forward.w3",
                                                  "aten::mm layers.0.feed_forward.w2"});
}

TEST_CASE("Llama: a training step on Meta is an exact dry run of the CPU's", "[llama][dry_run]") {
  for (const nn::ActivationCheckpointing& ac :
       {nn::ActivationCheckpointing::none(), nn::ActivationCheckpointing::full(),
        nn::ActivationCheckpointing::selective(policies::save_matmuls())}) {
    INFO(ac.describe());
    std::vector<std::vector<int64_t>> sizes;
    std::vector<int64_t> peaks, activations;
    for (Device device : {Device{kCPU}, Device{kMeta}}) {
      nn::Llama model(small_config(TensorOptions().device(device)));
      model.set_checkpointing(ac);
      optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-3));
      Tensor idx = tokens(2, 16, 19, 3, device), targets = tokens(2, 16, 19, 4, device);
      for (int step = 0; step < 2; ++step) {
        opt.zero_grad();
        reset_peak_memory_stats(device);
        const int64_t start = memory_allocated(device);
        MemoryTracker tracker(device);
        nn::LlamaOutput out = model.forward(idx, targets);
        activations.push_back(memory_allocated(device) - start);
        out.loss.backward();
        opt.step();
        sizes.push_back(tracker.allocation_sizes());
        peaks.push_back(max_memory_allocated(device));
      }
    }
    for (size_t i = 0; i < 2; ++i) {
      INFO("step " << i);
      CHECK(peaks[i] == peaks[i + 2]);
      CHECK(activations[i] == activations[i + 2]);
      CHECK(sizes[i] == sizes[i + 2]);
    }
  }
}

TEST_CASE("Llama 3 8B: a bf16 training step at sequence 8192 dry-runs as CUDA on Meta", "[llama][dry_run]") {
  // Batch 1, fused AdamW, the math attention (its [32, 8192, 8192] weights per layer dominate the
  // activations: remat's fused CUDA attention takes f32 and f64 only). Counted as CUDA's caching
  // allocator counts (DryRun).
  nn::LlamaConfig c = nn::LlamaConfig::llama3_8b();
  c.options = TensorOptions().dtype(kBFloat16).device(Device{kMeta});
  const int64_t params = 8030261248;
  std::map<std::string, int64_t> peak;
  const int64_t cpu_before = memory_allocated(Device{kCPU});
  for (const auto& [name, ac] : std::vector<std::pair<std::string, nn::ActivationCheckpointing>>{
           {"none", nn::ActivationCheckpointing::none()},
           {"full", nn::ActivationCheckpointing::full()},
           {"sac-mm", nn::ActivationCheckpointing::selective(policies::save_matmuls())}}) {
    INFO(name);
    DryRun dry(kCUDA);
    nn::Llama model(c);
    model.set_checkpointing(ac);
    optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-4).fused(true));
    Tensor idx = tokens(1, 8192, c.vocab_size, 3, Device{kMeta}), targets = tokens(1, 8192, c.vocab_size, 4, Device{kMeta});
    reset_peak_memory_stats(Device{kMeta});
    MemoryTracker tracker(Device{kMeta});
    model.forward(idx, targets).loss.backward();
    opt.step();
    peak[name] = max_memory_allocated(Device{kMeta});
    std::map<MemoryCategory, int64_t> at = tracker.at_peak();
    CHECK(at[MemoryCategory::Parameter] == 2 * params);
    WARN("Llama 3 8B, bf16, seq 8192, " << name << ": predicted peak " << peak[name] / 1e9 << " GB (parameters "
         << at[MemoryCategory::Parameter] / 1e9 << ", gradients " << at[MemoryCategory::Gradient] / 1e9
         << ", optimizer " << at[MemoryCategory::OptimizerState] / 1e9 << ", activations "
         << at[MemoryCategory::Activation] / 1e9 << ", temporaries " << at[MemoryCategory::Temporary] / 1e9 << ")");
  }
  CHECK(peak["full"] < peak["sac-mm"]);
  CHECK(peak["sac-mm"] < peak["none"]);
  CHECK(peak["full"] > 4 * params);  // bf16 weights and gradients at least
  CHECK(memory_allocated(Device{kCPU}) - cpu_before < (64 << 20));  // nothing of that size on the host
}

TEST_CASE("Llama errors", "[llama]") {
  nn::LlamaConfig bad = small_config();
  bad.n_kv_heads = 3;
  REQUIRE_THROWS_WITH(nn::Llama(bad), Contains("Attention: dim (32) must be divisible by n_heads (4) and n_heads by "
                                               "n_kv_heads (3)"));
  bad = small_config();
  bad.vocab_size = 0;
  REQUIRE_THROWS_WITH(nn::Llama(bad), Contains("Llama: vocab_size, n_layers, dim and n_heads must be positive"));
  REQUIRE_THROWS_WITH(nn::precompute_freqs_cos_sin(5, 4, 1e4, false),
                      Contains("precompute_freqs_cos_sin: head_dim must be even and positive and end positive (got "
                               "head_dim 5, end 4)"));
  REQUIRE_THROWS_WITH(nn::precompute_freqs_cis(6, 0, 1e4, false),
                      Contains("precompute_freqs_cis: head_dim must be even and positive and end positive (got "
                               "head_dim 6, end 0)"));
  REQUIRE_THROWS_WITH(nn::apply_rotary_emb(ones({2, 3, 4}), nn::precompute_freqs_cis(4, 3, 1e4, false)),
                      Contains("apply_rotary_emb: expected x [B, T, heads, 2 * half] and freqs_cis [>= T, half] of "
                               "dtype ComplexFloat, got x [2, 3, 4] Float, freqs_cis [3, 2] ComplexFloat"));
  // an f64 x needs the complex128 table (torch_llama.py's f64 twin)
  REQUIRE_THROWS_WITH(nn::apply_rotary_emb(ones({1, 3, 1, 4}, kDouble), nn::precompute_freqs_cis(4, 3, 1e4, false)),
                      Contains("of dtype ComplexDouble, got x [1, 3, 1, 4] Double, freqs_cis [3, 2] ComplexFloat"));
  REQUIRE_THROWS_WITH(nn::repeat_kv(ones({2, 3}), 2),
                      Contains("repeat_kv: expected x [B, T, n_kv_heads, head_dim] and n_rep >= 1, got [2, 3] and 2"));
  nn::Llama model(small_config());
  REQUIRE_THROWS_WITH(model.forward(ones({2, 3})), Contains("Llama: tokens must be a Long tensor [B, T]"));
  REQUIRE_THROWS_WITH(model.forward(tokens(1, 17, 19, 1)),
                      Contains("Llama: sequence of length 17 is longer than max_seq_len 16"));
  REQUIRE_THROWS_WITH(model.forward(tokens(1, 4, 19, 1), tokens(1, 5, 19, 1)),
                      Contains("Llama: targets of shape [1, 5] do not match tokens [1, 4]"));
  REQUIRE_THROWS_WITH(model.blocks[0]->attention->forward(ones({2, 3}), model.freqs_cis),
                      Contains("Attention: expected input [B, T, 32], got [2, 3]"));
}

TEST_CASE("a block runs the PyTorch Llama's op calls, call for call, in f32 and bf16", "[llama][pytorch]") {
  // tests/nn/data/llama_block_calls.json: the calls of the PyTorch twin's block (bench/torch_llama.py,
  // torchtitan's code), recorded by tools/llama_block_calls.py: RMSNorm as PyTorch 2.15's CPU
  // composite, the rotary embeddings through complex64, the fused attention. The same calls here are
  // what lets a plan file made by remat apply to the twin call by call (python/remat_plan,
  // docs/pytorch.md).
  const nlohmann::json doc = remat::testing::read_json("tests/nn/data/llama_block_calls.json");
  const nlohmann::json& sz = doc["sizes"];
  const int64_t B = sz["batch"], T = sz["seq"];
  for (const auto& [name, dtype] : {std::pair<std::string, ScalarType>{"f32", kFloat}, {"bf16", kBFloat16}}) {
    INFO(name);
    const std::vector<std::string> expected = remat::testing::expected_calls(doc[name]);
    nn::LlamaConfig c = small_config(TensorOptions().dtype(dtype));
    c.dim = sz["dim"];
    c.n_heads = sz["heads"];
    c.n_kv_heads = sz["kv_heads"];
    c.ffn_hidden = sz["ffn_hidden"];
    c.n_layers = 1;
    c.max_seq_len = T;
    c.sdpa_backend = SDPBackend::FLASH_ATTENTION;  // F.scaled_dot_product_attention's CPU kernel
    nn::Llama model(c);
    Tensor x = seeded_randn({B, T, c.dim}, 1, dtype).requires_grad_(true);
    auto rec = std::make_shared<remat::testing::CallRecorder>();
    {
      DispatchModeGuard guard(rec);
      model.blocks[0]->forward(x, model.freqs_cis);
    }
    REQUIRE(expected.size() == (dtype == kFloat ? 75 : 83));
    CHECK(rec->calls == expected);
  }
}
