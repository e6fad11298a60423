// Tests nn/gpt.cpp: training reduces the loss; checkpointing strategies give the same gradients
// (bitwise for the non-reentrant ones, within 1e-6 for reentrant); generate(); errors.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>

#include "remat.h"
#include "tests/testing/nn_ops.h"

using namespace remat;
using Catch::Contains;

namespace {

nn::GPTConfig small_config(double dropout = 0.0, SDPBackend attention = SDPBackend::MATH) {
  nn::GPTConfig c;
  c.sdpa_backend = attention;
  c.vocab_size = 17;
  c.block_size = 16;
  c.n_layer = 4;
  c.n_head = 2;
  c.n_embd = 16;
  c.dropout = dropout;
  c.seed = 5;
  return c;
}

// A fixed batch of tokens [B, T] from a linear congruential sequence.
Tensor tokens(int64_t B, int64_t T, int64_t vocab, uint64_t seed) {
  std::vector<double> v;
  uint64_t s = seed;
  for (int64_t i = 0; i < B * T; ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v.push_back(static_cast<double>((s >> 33) % static_cast<uint64_t>(vocab)));
  }
  return from_vector(v, {B, T}, kLong);
}

struct Run {
  Tensor loss;
  std::vector<std::pair<std::string, Tensor>> grads;
};

// One forward and backward of a freshly built model (same seed: same weights) under `ac`.
Run run(const nn::ActivationCheckpointing& ac, double dropout = 0.0, SDPBackend attention = SDPBackend::MATH) {
  nn::GPT model(small_config(dropout, attention));
  model.set_checkpointing(ac);
  manual_seed(123);  // dropout masks come from the default generator
  Tensor idx = tokens(3, 12, 17, 1), targets = tokens(3, 12, 17, 2);
  nn::GPTOutput out = model.forward(idx, targets);
  out.loss.backward();
  Run r;
  r.loss = out.loss.detach();
  for (const auto& [name, p] : model.named_parameters()) r.grads.emplace_back(name, p.grad());
  return r;
}

void check_bitwise_equal(const Run& a, const Run& b) {
  CHECK(equal(a.loss, b.loss));
  REQUIRE(a.grads.size() == b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) {
    INFO(a.grads[i].first);
    REQUIRE(a.grads[i].second.defined());
    CHECK(equal(a.grads[i].second, b.grads[i].second));
  }
}

}  // namespace

TEST_CASE("GPT's loss decreases over a few AdamW steps on a fixed batch", "[gpt]") {
  nn::GPT model(small_config());
  optim::AdamW opt(model.parameters(), optim::AdamWOptions(1e-2));
  Tensor idx = tokens(4, 16, 17, 3), targets = tokens(4, 16, 17, 4);
  std::vector<double> losses;
  for (int step = 0; step < 8; ++step) {
    opt.zero_grad();
    nn::GPTOutput out = model.forward(idx, targets);
    losses.push_back(out.loss.item());
    out.loss.backward();
    opt.step();
  }
  // Starts near ln(17): nanoGPT's small init gives nearly uniform predictions.
  CHECK(losses[0] == Approx(std::log(17.0)).margin(0.1));
  for (double l : losses) CHECK(std::isfinite(l));
  INFO("losses " << ::Catch::Detail::stringify(losses));
  for (size_t i = 1; i < losses.size(); ++i) CHECK(losses[i] < losses[i - 1]);
  CHECK(losses.back() < losses.front() - 0.4);
}

TEST_CASE("GPT is initialised as nanoGPT: N(0, 0.02), zero biases, scaled residual projections", "[gpt]") {
  nn::GPT model(small_config());
  // The sample standard deviation of n normal draws has a standard error of sigma / sqrt(2 n):
  // allow 5 of them.
  auto check_std = [](const Tensor& t, double sigma) {
    std::vector<double> v = t.to_vector();
    double m = 0, s = 0;
    for (double x : v) m += x / static_cast<double>(v.size());
    for (double x : v) s += (x - m) * (x - m) / static_cast<double>(v.size());
    CHECK(std::sqrt(s) == Approx(sigma).epsilon(5.0 / std::sqrt(2.0 * static_cast<double>(v.size()))));
  };
  check_std(model.wte->weight, 0.02);
  check_std(model.wpe->weight, 0.02);
  check_std(model.blocks[0]->attn->qkv->weight, 0.02);
  check_std(model.blocks[1]->mlp->fc1->weight, 0.02);
  const double residual = 0.02 / std::sqrt(8.0);  // 2 * n_layer = 8
  check_std(model.blocks[2]->mlp->fc2->weight, residual);
  check_std(model.blocks[3]->attn->proj->weight, residual);
  CHECK(equal(model.blocks[0]->mlp->fc2->bias, zeros({16})));
  CHECK(equal(model.blocks[0]->attn->qkv->bias, zeros({48})));
  // Norms start as the identity; the same seed gives the same weights.
  CHECK(equal(model.ln_f->named_parameters()[0].second, ones({16})));
  nn::GPT again(small_config());
  for (size_t i = 0; i < model.parameters().size(); ++i) CHECK(equal(model.parameters()[i], again.parameters()[i]));
}

TEST_CASE("non-reentrant checkpointing strategies give bitwise identical gradients", "[gpt][checkpoint]") {
  Run none = run(nn::ActivationCheckpointing::none());
  SECTION("full") { check_bitwise_equal(none, run(nn::ActivationCheckpointing::full())); }
  SECTION("every_nth(2)") { check_bitwise_equal(none, run(nn::ActivationCheckpointing::every_nth(2))); }
  SECTION("selective(save_matmuls)") {
    check_bitwise_equal(none, run(nn::ActivationCheckpointing::selective(policies::save_matmuls())));
  }
  SECTION("selective(save every other mm)") {
    check_bitwise_equal(
        none, run(nn::ActivationCheckpointing::selective(policies::save_every_other({"aten::addmm", "aten::bmm"}))));
  }
}

TEST_CASE("the fused attention backend: checkpointing and SAC keeping the fused op are bitwise no checkpointing",
          "[gpt][checkpoint][flash]") {
  const SDPBackend flash = SDPBackend::FLASH_ATTENTION;
  Run none = run(nn::ActivationCheckpointing::none(), 0.0, flash);
  SECTION("full") { check_bitwise_equal(none, run(nn::ActivationCheckpointing::full(), 0.0, flash)); }
  SECTION("selective(save the fused attention and every matmul)") {
    auto policy = policies::save_ops({"aten::_scaled_dot_product_flash_attention_for_cpu", "aten::addmm"});
    reset_checkpoint_stats();
    check_bitwise_equal(none, run(nn::ActivationCheckpointing::selective(policy), 0.0, flash));
    CHECK(checkpoint_stats().total.ops_replayed >= 4);  // at least the fused op of each of the 4 blocks
  }
  SECTION("close to the math backend (float32 reassociation)") {
    Run math = run(nn::ActivationCheckpointing::none());
    CHECK(std::abs(math.loss.item() - none.loss.item()) < 1e-5);
    for (size_t i = 0; i < math.grads.size(); ++i) {
      INFO(math.grads[i].first);
      CHECK(remat::testing::max_abs_diff(math.grads[i].second, none.grads[i].second) < 1e-5);
    }
  }
}

TEST_CASE("with dropout, checkpointing replays the same masks (RNG state preserved)", "[gpt][checkpoint]") {
  Run none = run(nn::ActivationCheckpointing::none(), 0.1);
  check_bitwise_equal(none, run(nn::ActivationCheckpointing::full(), 0.1));
  check_bitwise_equal(none, run(nn::ActivationCheckpointing::selective(policies::save_matmuls()), 0.1));
  // Dropout does something: the loss differs from the dropout-free run.
  CHECK_FALSE(equal(none.loss, run(nn::ActivationCheckpointing::none()).loss));
}

TEST_CASE("reentrant full checkpointing matches within 1e-6 relative", "[gpt][checkpoint]") {
  Run none = run(nn::ActivationCheckpointing::none());
  Run reentrant = run(nn::ActivationCheckpointing::full(/*use_reentrant=*/true));
  CHECK(std::abs(reentrant.loss.item() - none.loss.item()) <= 1e-6 * std::abs(none.loss.item()));
  REQUIRE(none.grads.size() == reentrant.grads.size());
  for (size_t i = 0; i < none.grads.size(); ++i) {
    INFO(none.grads[i].first);
    REQUIRE(reentrant.grads[i].second.defined());
    std::vector<double> a = none.grads[i].second.to_vector(), b = reentrant.grads[i].second.to_vector();
    double scale = 0, diff = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      scale = std::max(scale, std::abs(a[k]));
      diff = std::max(diff, std::abs(a[k] - b[k]));
    }
    CHECK(diff <= 1e-6 * scale);
  }
}

TEST_CASE("without grad mode, a checkpointed model runs plainly and gives the same logits", "[gpt][checkpoint]") {
  nn::GPT a(small_config()), b(small_config());
  b.set_checkpointing(nn::ActivationCheckpointing::full());
  Tensor idx = tokens(2, 10, 17, 9);
  autograd::NoGradGuard no_grad;
  CHECK(equal(a.forward(idx).logits, b.forward(idx).logits));
}

TEST_CASE("GPT::generate appends tokens to the prompt", "[gpt]") {
  nn::GPT model(small_config());
  Tensor prompt = tokens(2, 3, 17, 5);
  Tensor out = model.generate(prompt, 20);  // beyond block_size 16: the context is cropped
  CHECK(out.sizes() == Shape{2, 23});
  CHECK(out.dtype() == kLong);
  CHECK(equal(slice(out, 1, 0, 3), prompt));
  for (double t : out.to_vector()) {
    CHECK(t >= 0);
    CHECK(t < 17);
  }
  CHECK(model.is_training());  // restored
  // Greedy decoding is deterministic; sampling is reproducible from a generator.
  CHECK(equal(model.generate(prompt, 5, 0.0), model.generate(prompt, 5, 0.0)));
  Generator g1(9), g2(9);
  CHECK(equal(model.generate(prompt, 5, 1.0, &g1), model.generate(prompt, 5, 1.0, &g2)));
}

TEST_CASE("GPT errors", "[gpt]") {
  nn::GPTConfig bad = small_config();
  bad.vocab_size = 0;
  REQUIRE_THROWS_WITH(nn::GPT(bad), Contains("GPT: vocab_size, block_size and n_layer must be positive"));
  nn::GPT model(small_config());
  REQUIRE_THROWS_WITH(model.forward(ones({2, 3})), Contains("GPT: idx must be a Long tensor [B, T]"));
  REQUIRE_THROWS_WITH(model.forward(tokens(1, 17, 17, 1)), Contains("Cannot forward sequence of length 17, block size is only 16"));
  REQUIRE_THROWS_WITH(model.forward(tokens(1, 4, 17, 1), tokens(1, 5, 17, 1)),
                      Contains("GPT: targets of shape [1, 5] do not match idx [1, 4]"));
  REQUIRE_THROWS_WITH(nn::ActivationCheckpointing::every_nth(0), Contains("every_nth: n must be >= 1 (got 0)"));
  REQUIRE_THROWS_WITH(nn::ActivationCheckpointing::selective(PolicyFn()), Contains("selective: empty policy"));
}
