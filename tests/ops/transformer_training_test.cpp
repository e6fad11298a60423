// Mirrors test/test_nn.py-style end-to-end training checks: a tiny two-layer GPT written directly
// with remat ops (no nn modules) trains on a fixed batch with plain SGD, in float32 and under
// autocast(kCPU, kBFloat16). Exercises embedding, layer_norm, linear/addmm, mm, bmm (through
// scaled_dot_product_attention with a causal mask), gelu, residual adds and cross_entropy, forward
// and backward together.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "remat.h"

using namespace remat;

namespace {

constexpr int64_t kVocab = 16, kEmbd = 32, kSeq = 8, kBatch = 4, kHeads = 2, kLayers = 2;
constexpr int64_t kHeadDim = kEmbd / kHeads, kHidden = 4 * kEmbd;
constexpr int kSteps = 50;
constexpr double kLr = 0.3;

// A float32 leaf: N(0, 1) * scale from its own seed.
Tensor param(const Shape& shape, uint64_t seed, double scale) {
  Generator gen(seed);
  Tensor t = randn(shape, TensorOptions().dtype(kFloat), &gen);
  t.mul_(scale);
  return t.requires_grad_();
}
Tensor constant(const Shape& shape, double value) { return full(shape, value).requires_grad_(); }

struct LayerParams {
  Tensor ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fc2_w, fc2_b;
};

struct TinyGPT {
  Tensor wte, wpe, lnf_w, lnf_b;  // the token embedding is also the output head (tied, as GPT-2)
  std::vector<LayerParams> layers;

  explicit TinyGPT(uint64_t seed) {
    // Linear weights ~ N(0, 1/fan_in): activations of unit scale, so that plain SGD makes progress
    // in a few dozen steps. Embeddings ~ N(0, 0.1^2): the tied head's logits start small, so the
    // initial loss is close to ln(V) (the loss cannot fall merely by shrinking large logits).
    const double in_d = 1.0 / std::sqrt(double(kEmbd)), in_h = 1.0 / std::sqrt(double(kHidden));
    wte = param({kVocab, kEmbd}, seed++, 0.1);
    wpe = param({kSeq, kEmbd}, seed++, 0.1);
    for (int64_t l = 0; l < kLayers; ++l) {
      LayerParams p;
      p.ln1_w = constant({kEmbd}, 1.0), p.ln1_b = constant({kEmbd}, 0.0);
      p.qkv_w = param({3 * kEmbd, kEmbd}, seed++, in_d), p.qkv_b = constant({3 * kEmbd}, 0.0);
      p.proj_w = param({kEmbd, kEmbd}, seed++, in_d), p.proj_b = constant({kEmbd}, 0.0);
      p.ln2_w = constant({kEmbd}, 1.0), p.ln2_b = constant({kEmbd}, 0.0);
      p.fc_w = param({kHidden, kEmbd}, seed++, in_d), p.fc_b = constant({kHidden}, 0.0);
      p.fc2_w = param({kEmbd, kHidden}, seed++, in_h), p.fc2_b = constant({kEmbd}, 0.0);
      layers.push_back(p);
    }
    lnf_w = constant({kEmbd}, 1.0), lnf_b = constant({kEmbd}, 0.0);
  }

  std::vector<Tensor> parameters() const {
    std::vector<Tensor> ps = {wte, wpe, lnf_w, lnf_b};
    for (const LayerParams& p : layers)
      for (const Tensor& t : {p.ln1_w, p.ln1_b, p.qkv_w, p.qkv_b, p.proj_w, p.proj_b, p.ln2_w, p.ln2_b, p.fc_w,
                              p.fc_b, p.fc2_w, p.fc2_b})
        ps.push_back(t);
    return ps;
  }

  // [B, T] token ids -> [B*T, V] logits.
  Tensor forward(const Tensor& idx) const {
    Tensor x = embedding(wte, idx) + embedding(wpe, arange(kSeq, TensorOptions().dtype(kLong)));  // [B, T, C]
    for (const LayerParams& p : layers) {
      // causal self-attention: [B, T, 3C] -> q, k, v as [B, H, T, D]
      Tensor qkv = linear(layer_norm(x, {kEmbd}, p.ln1_w, p.ln1_b), p.qkv_w, p.qkv_b);
      auto heads = [&](int64_t i) {
        Tensor part = slice(qkv, -1, i * kEmbd, (i + 1) * kEmbd);
        return transpose(reshape(part, {kBatch, kSeq, kHeads, kHeadDim}), 1, 2);
      };
      Tensor y = scaled_dot_product_attention(heads(0), heads(1), heads(2), /*is_causal=*/true);
      y = reshape(transpose(y, 1, 2), {kBatch, kSeq, kEmbd});
      x = x + linear(y, p.proj_w, p.proj_b);
      // MLP
      Tensor h = gelu(linear(layer_norm(x, {kEmbd}, p.ln2_w, p.ln2_b), p.fc_w, p.fc_b));
      x = x + linear(h, p.fc2_w, p.fc2_b);
    }
    x = layer_norm(x, {kEmbd}, lnf_w, lnf_b);
    return mm(reshape(x, {kBatch * kSeq, kEmbd}), transpose(wte, 0, 1));  // tied head
  }
};

// A fixed batch: each row counts up by its own stride from its own start (mod V), and the target
// of a position is the next token of its row, so the task needs the previous tokens (the stride),
// not only the current one.
struct Batch {
  Tensor idx, targets;
};
Batch fixed_batch() {
  std::vector<double> idx, targets;
  for (int64_t b = 0; b < kBatch; ++b) {
    const int64_t start = 3 * b + 1, stride = b + 1;
    for (int64_t t = 0; t < kSeq; ++t) {
      idx.push_back(double((start + stride * t) % kVocab));
      targets.push_back(double((start + stride * (t + 1)) % kVocab));
    }
  }
  TensorOptions i64 = TensorOptions().dtype(kLong);
  return {from_vector(idx, {kBatch, kSeq}, i64), from_vector(targets, {kBatch * kSeq}, i64)};
}

// Records the result dtype of every matrix product (mm, addmm, bmm) it sees.
struct ProductDtypes : DispatchMode {
  std::map<std::string, std::vector<ScalarType>> seen;
  std::vector<IValue> dispatch(const OperatorHandle& op, const std::vector<IValue>& args) override {
    std::vector<IValue> out = op.call(args);
    const std::string& n = op.name();
    if (n == "aten::mm" || n == "aten::addmm" || n == "aten::bmm") seen[n].push_back(out.at(0).toTensor().dtype());
    return out;
  }
};

struct Run {
  std::vector<double> losses;
  std::map<std::string, std::vector<ScalarType>> forward_products;  // of the first step
  ScalarType loss_dtype = kDouble;
  std::vector<ScalarType> grad_dtypes;  // of the first step
};

// kSteps steps of SGD (p -= lr * grad) on the fixed batch; the forward under autocast when asked
// (backward outside it, as PyTorch recommends).
Run train(bool use_autocast) {
  TinyGPT model(/*seed=*/1234);
  Batch batch = fixed_batch();
  std::vector<Tensor> params = model.parameters();
  Run run;
  for (int step = 0; step < kSteps; ++step) {
    Tensor loss;
    {
      auto probe = std::make_shared<ProductDtypes>();
      DispatchModeGuard mode(probe);
      autocast ac(kCPU, kBFloat16, use_autocast);
      loss = cross_entropy(model.forward(batch.idx), batch.targets);
      if (step == 0) run.forward_products = probe->seen;
    }
    run.losses.push_back(loss.item());
    if (step == 0) run.loss_dtype = loss.dtype();
    loss.backward();
    autograd::NoGradGuard no_grad;
    for (Tensor& p : params) {
      REQUIRE(p.grad().defined());
      if (step == 0) run.grad_dtypes.push_back(p.grad().dtype());
      p.add_(p.grad() * -kLr);
      p.set_grad(Tensor());
    }
  }
  return run;
}

// H(target | key) in nats over the batch's positions, from the empirical counts: the lowest mean
// cross-entropy any model that sees only `key` of a position can reach on this batch.
double conditional_entropy(const std::vector<std::pair<int64_t, int64_t>>& key_target) {
  std::map<int64_t, double> keys;
  std::map<std::pair<int64_t, int64_t>, double> pairs;
  for (const auto& kt : key_target) keys[kt.first] += 1, pairs[kt] += 1;
  double h = 0, n = static_cast<double>(key_target.size());
  for (const auto& [kt, c] : pairs) h -= c / n * std::log(c / keys[kt.first]);
  return h;
}

void check_trains(const Run& run) {
  const double initial = run.losses.front(), final_loss = run.losses.back();
  INFO("losses: first " << initial << ", last " << final_loss);
  for (double l : run.losses) REQUIRE(std::isfinite(l));
  // Near-uniform predictions at init (observed 2.81 against ln 16 = 2.77).
  CHECK(initial == Approx(std::log(double(kVocab))).margin(0.3));
  // Observed: the final loss is 0.022 in float32 and bfloat16 alike, 0.008x the initial one (the
  // batch is memorised). 0.1x leaves a wide margin for summation-order and bf16 rounding
  // differences; the bounds below say what the remaining loss must exclude.
  CHECK(final_loss < 0.1 * initial);
  // It falls over the whole run, not only at the end: the mean of the last 10 losses is below
  // half the mean of the first 10 (observed: 0.025 against 2.0).
  double first = 0, last = 0;
  for (size_t i = 0; i < 10; ++i) first += run.losses[i], last += run.losses[run.losses.size() - 1 - i];
  CHECK(last < 0.5 * first);
  // The model uses earlier tokens (attention under the causal mask works, forward and backward):
  // no model that sees only a position's own token, or its own token and position, can go below
  // these conditional entropies of the batch (0.79 and 0.087 nats); observed 0.022, 4x below the
  // tighter one.
  Batch batch = fixed_batch();
  std::vector<double> idx = batch.idx.to_vector(), next = batch.targets.to_vector();
  std::vector<std::pair<int64_t, int64_t>> by_token, by_token_and_position;
  for (size_t i = 0; i < idx.size(); ++i) {
    const int64_t token = static_cast<int64_t>(idx[i]), target = static_cast<int64_t>(next[i]);
    by_token.emplace_back(token, target);
    by_token_and_position.emplace_back(token * kSeq + static_cast<int64_t>(i) % kSeq, target);
  }
  const double h_token = conditional_entropy(by_token), h_token_position = conditional_entropy(by_token_and_position);
  INFO("H(next | token) = " << h_token << ", H(next | token, position) = " << h_token_position);
  REQUIRE(h_token_position > 0.05);  // the batch does need context (a property of fixed_batch)
  CHECK(final_loss < h_token);
  CHECK(final_loss < h_token_position);
}

}  // namespace

TEST_CASE("tiny transformer from ops trains with SGD in float32", "[transformer][training]") {
  Run run = train(/*use_autocast=*/false);
  check_trains(run);
  CHECK(run.loss_dtype == kFloat);
  // The matrix products the forward is made of all ran, in float32.
  for (const char* op : {"aten::mm", "aten::addmm", "aten::bmm"}) {
    INFO(op);
    REQUIRE(run.forward_products.count(op) == 1);
    for (ScalarType dt : run.forward_products.at(op)) CHECK(dt == kFloat);
  }
  // 2 bmm per attention (q k^T, attn v) per layer; 4 linears per layer; the tied head.
  CHECK(run.forward_products.at("aten::bmm").size() == 2 * kLayers);
  CHECK(run.forward_products.at("aten::addmm").size() == 4 * kLayers);
  CHECK(run.forward_products.at("aten::mm").size() == 1);
}

TEST_CASE("tiny transformer from ops trains with SGD under autocast(kCPU, kBFloat16)",
          "[transformer][training][autocast]") {
  Run run = train(/*use_autocast=*/true);
  check_trains(run);
  // cross_entropy is on autocast's float32 list; every matrix product runs in bfloat16.
  CHECK(run.loss_dtype == kFloat);
  for (const char* op : {"aten::mm", "aten::addmm", "aten::bmm"}) {
    INFO(op);
    REQUIRE(run.forward_products.count(op) == 1);
    for (ScalarType dt : run.forward_products.at(op)) CHECK(dt == kBFloat16);
  }
  CHECK(run.forward_products.at("aten::bmm").size() == 2 * kLayers);
  CHECK(run.forward_products.at("aten::addmm").size() == 4 * kLayers);
  CHECK(run.forward_products.at("aten::mm").size() == 1);
  // The float32 parameters get float32 gradients (through the casts autograd recorded).
  for (ScalarType dt : run.grad_dtypes) CHECK(dt == kFloat);
}
