// torchtitan's models/llama3/model.py in C++ (see llama.h).
#include "nn/llama.h"

#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "engine/autograd/grad_mode.h"
#include "nn/init.h"
#include "ops/functions.h"

namespace remat::nn {

int64_t LlamaConfig::ffn_hidden_dim() const {
  if (ffn_hidden > 0) return ffn_hidden;
  // FeedForward.__init__ with hidden_dim = 4 * dim: two thirds of it, times the multiplier, rounded up.
  int64_t hidden = static_cast<int64_t>(2.0 * static_cast<double>(4 * dim) / 3.0);
  if (ffn_dim_multiplier > 0) hidden = static_cast<int64_t>(ffn_dim_multiplier * static_cast<double>(hidden));
  return multiple_of * ((hidden + multiple_of - 1) / multiple_of);
}

LlamaConfig LlamaConfig::debugmodel() {
  LlamaConfig c;
  c.dim = 256;
  c.n_layers = 6;
  c.n_heads = 16;
  c.vocab_size = 2048;
  c.rope_theta = 500000;
  c.max_seq_len = 2048;
  return c;
}

LlamaConfig LlamaConfig::llama3_8b() {
  LlamaConfig c;
  c.dim = 4096;
  c.n_layers = 32;
  c.n_heads = 32;
  c.n_kv_heads = 8;
  c.vocab_size = 128256;
  c.multiple_of = 1024;
  c.ffn_dim_multiplier = 1.3;
  c.rope_theta = 500000;
  c.max_seq_len = 8192;
  return c;
}

LlamaConfig LlamaConfig::named(const std::string& name) {
  if (name == "debugmodel") return debugmodel();
  if (name == "llama3_8b") return llama3_8b();
  REMAT_CHECK(false, "LlamaConfig::named: unknown configuration '", name, "' (debugmodel or llama3_8b)");
  return {};
}

namespace {
// The cos and sin of precompute_freqs_cis, in f64 on the host. Computed once per argument set: a
// planner builds the model for each of its dry runs, and at Llama 3 8B's 8192 positions the
// 524288 sincos calls were an eighth of its time.
struct RotaryTables {
  std::vector<double> cos, sin;
};

RotaryTables compute_rotary_tables(int64_t head_dim, int64_t end, double theta, bool scaling) {
  const int64_t half = head_dim / 2;
  const double kPi = 3.14159265358979323846;
  std::vector<double> freqs(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    double f = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));
    if (scaling) {  // apply_scaling with RoPEScalingArgs' defaults
      const double factor = 8.0, low = 1.0, high = 4.0, original = 8192.0;
      const double low_wavelen = original / low, high_wavelen = original / high, wavelen = 2 * kPi / f;
      const double scaled = wavelen > low_wavelen ? f / factor : f;
      const double smooth = (original / wavelen - low) / (high - low);
      f = wavelen >= high_wavelen && wavelen <= low_wavelen ? (1 - smooth) * scaled / factor + smooth * scaled
                                                            : scaled;
    }
    freqs[static_cast<size_t>(i)] = f;
  }
  std::vector<double> c(static_cast<size_t>(end * half)), s(c.size());
  for (int64_t t = 0; t < end; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(t) * freqs[static_cast<size_t>(i)];
      c[static_cast<size_t>(t * half + i)] = std::cos(angle);
      s[static_cast<size_t>(t * half + i)] = std::sin(angle);
    }
  }
  return {std::move(c), std::move(s)};
}

const RotaryTables& rotary_tables(int64_t head_dim, int64_t end, double theta, bool scaling) {
  static std::mutex mutex;
  static std::map<std::tuple<int64_t, int64_t, double, bool>, std::unique_ptr<RotaryTables>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<RotaryTables>& entry = cache[std::make_tuple(head_dim, end, theta, scaling)];
  if (!entry) entry = std::make_unique<RotaryTables>(compute_rotary_tables(head_dim, end, theta, scaling));
  return *entry;
}
}  // namespace

namespace {
void check_rotary_args(const char* fn, int64_t head_dim, int64_t end) {
  REMAT_CHECK(head_dim > 0 && head_dim % 2 == 0 && end > 0, fn, ": head_dim must be even and positive and end "
              "positive (got head_dim ", head_dim, ", end ", end, ")");
}
// f32 (the parts of torchtitan's complex64), or f64 for an f64 model
TensorOptions rotary_part_options(TensorOptions options) {
  return options.dtype(options.dtype() == kDouble ? kDouble : kFloat).requires_grad(false);
}
}  // namespace

Tensor precompute_freqs_cis(int64_t head_dim, int64_t end, double theta, bool scaling, TensorOptions options) {
  check_rotary_args("precompute_freqs_cis", head_dim, end);
  const int64_t half = head_dim / 2;
  const RotaryTables& tables = rotary_tables(head_dim, end, theta, scaling);
  std::vector<double> pairs(tables.cos.size() * 2);  // torch.polar's (cos, sin), interleaved
  for (size_t i = 0; i < tables.cos.size(); ++i) pairs[2 * i] = tables.cos[i], pairs[2 * i + 1] = tables.sin[i];
  autograd::NoGradGuard no_grad;
  return view_as_complex(from_vector(pairs, {end, half, 2}, rotary_part_options(options)));
}

std::pair<Tensor, Tensor> precompute_freqs_cos_sin(int64_t head_dim, int64_t end, double theta, bool scaling,
                                                   TensorOptions options) {
  check_rotary_args("precompute_freqs_cos_sin", head_dim, end);
  const int64_t half = head_dim / 2;
  const RotaryTables& tables = rotary_tables(head_dim, end, theta, scaling);
  const TensorOptions o = rotary_part_options(options);
  return {from_vector(tables.cos, {end, half}, o), from_vector(tables.sin, {end, half}, o)};
}

Tensor apply_rotary_emb(const Tensor& x, const Tensor& freqs_cis) {
  // torchtitan computes in f32 (xq.float(), complex64) and returns type_as(xq); an f64 model stays
  // in f64 (complex128).
  const ScalarType compute = x.dtype() == kDouble ? kDouble : kFloat;
  REMAT_CHECK(x.dim() == 4 && x.size(3) % 2 == 0 && freqs_cis.dim() == 2 && x.size(1) <= freqs_cis.size(0) &&
                  freqs_cis.size(1) * 2 == x.size(3) && freqs_cis.dtype() == toComplexType(compute),
              "apply_rotary_emb: expected x [B, T, heads, 2 * half] and freqs_cis [>= T, half] of dtype ",
              toString(toComplexType(compute)), ", got x ", x.sizes(), " ", toString(x.dtype()), ", freqs_cis ",
              freqs_cis.sizes(), " ", toString(freqs_cis.dtype()));
  const int64_t B = x.size(0), T = x.size(1), H = x.size(2), D = x.size(3), half = D / 2;
  Tensor xc = view_as_complex(x.to(compute).reshape({B, T, H, half, 2}));
  Tensor f = freqs_cis.slice(0, 0, T).view({1, T, 1, half});  // reshape_for_broadcast
  return view_as_real(mul(xc, f)).view({B, T, H, D}).to(x.dtype());  // flatten(3), type_as(x)
}

Tensor repeat_kv(const Tensor& x, int64_t n_rep) {
  REMAT_CHECK(x.dim() == 4 && n_rep >= 1, "repeat_kv: expected x [B, T, n_kv_heads, head_dim] and n_rep >= 1, got ",
              x.sizes(), " and ", n_rep);
  if (n_rep == 1) return x;
  const int64_t B = x.size(0), T = x.size(1), KV = x.size(2), D = x.size(3);
  return x.unsqueeze(3).expand({B, T, KV, n_rep, D}).reshape({B, T, KV * n_rep, D});
}

LlamaAttention::LlamaAttention(const LlamaConfig& c, Generator* g)
    : Module("Attention"), n_heads(c.n_heads), n_kv_heads(c.kv_heads()), head_dim(c.head_dim()) {
  REMAT_CHECK(c.n_heads > 0 && c.dim % c.n_heads == 0 && n_kv_heads > 0 && c.n_heads % n_kv_heads == 0,
              "Attention: dim (", c.dim, ") must be divisible by n_heads (", c.n_heads, ") and n_heads by n_kv_heads (",
              n_kv_heads, ")");
  n_rep = n_heads / n_kv_heads;
  wq = register_module("wq", std::make_shared<Linear>(c.dim, n_heads * head_dim, false, g, c.options));
  wk = register_module("wk", std::make_shared<Linear>(c.dim, n_kv_heads * head_dim, false, g, c.options));
  wv = register_module("wv", std::make_shared<Linear>(c.dim, n_kv_heads * head_dim, false, g, c.options));
  wo = register_module("wo", std::make_shared<Linear>(n_heads * head_dim, c.dim, false, g, c.options));
  sdpa_backend = c.sdpa_backend;
}

Tensor LlamaAttention::forward(const Tensor& x, const Tensor& freqs_cis) const {
  auto s = enter();
  REMAT_CHECK(x.dim() == 3 && x.size(2) == wq->in_features, "Attention: expected input [B, T, ", wq->in_features,
              "], got ", x.sizes());
  const int64_t B = x.size(0), T = x.size(1);
  Tensor xq = wq->forward(x).view({B, T, n_heads, head_dim});
  Tensor xk = wk->forward(x).view({B, T, n_kv_heads, head_dim});
  Tensor xv = wv->forward(x).view({B, T, n_kv_heads, head_dim});
  xq = apply_rotary_emb(xq, freqs_cis);
  xk = apply_rotary_emb(xk, freqs_cis);
  Tensor keys = repeat_kv(xk, n_rep), values = repeat_kv(xv, n_rep);
  Tensor output;
  {
    remat::scope core("inner_attention");  // torchtitan's ScaledDotProductAttentionWrapper
    sdpa_kernel backend(sdpa_backend);
    output = scaled_dot_product_attention(xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2),
                                          /*is_causal=*/true);
  }
  output = output.transpose(1, 2).contiguous().view({B, T, n_heads * head_dim});
  return wo->forward(output);
}

FeedForward::FeedForward(int64_t dim, int64_t hidden, Generator* g, TensorOptions options) : Module("FeedForward") {
  w1 = register_module("w1", std::make_shared<Linear>(dim, hidden, false, g, options));
  w2 = register_module("w2", std::make_shared<Linear>(hidden, dim, false, g, options));
  w3 = register_module("w3", std::make_shared<Linear>(dim, hidden, false, g, options));
}

Tensor FeedForward::forward(const Tensor& x) const {
  auto s = enter();
  // torchtitan's w2(F.silu(w1(x)) * w3(x)), in Python's order: w1, silu, then w3 (C++ leaves the
  // order of a call's arguments unspecified; GCC ran w3 first, so SAC's matmul count differed).
  Tensor gate = silu(w1->forward(x));
  Tensor up = w3->forward(x);
  return w2->forward(mul(gate, up));
}

TransformerBlock::TransformerBlock(int64_t layer_id, const LlamaConfig& c, Generator* g) : Module("TransformerBlock") {
  attention = register_module("attention", std::make_shared<LlamaAttention>(c, g));
  feed_forward = register_module("feed_forward", std::make_shared<FeedForward>(c.dim, c.ffn_hidden_dim(), g, c.options));
  attention_norm = register_module("attention_norm", std::make_shared<RMSNorm>(c.dim, c.norm_eps, true, c.options));
  ffn_norm = register_module("ffn_norm", std::make_shared<RMSNorm>(c.dim, c.norm_eps, true, c.options));
  const double depth = c.depth_init ? static_cast<double>(layer_id + 1) : static_cast<double>(c.n_layers);
  weight_init_std = 0.02 / std::sqrt(2.0 * depth);
}

Tensor TransformerBlock::forward(const Tensor& x, const Tensor& freqs_cis) const {
  auto s = enter();
  Tensor h = x + attention->forward(attention_norm->forward(x), freqs_cis);
  return h + feed_forward->forward(ffn_norm->forward(h));
}

namespace {
Tensor table(const LlamaConfig& c) {
  REMAT_CHECK(c.vocab_size > 0 && c.n_layers > 0 && c.dim > 0 && c.n_heads > 0 && c.dim % c.n_heads == 0,
              "Llama: vocab_size, n_layers, dim and n_heads must be positive and dim divisible by n_heads (got ",
              c.vocab_size, ", ", c.n_layers, ", ", c.dim, ", ", c.n_heads, ")");
  return precompute_freqs_cis(c.head_dim(), c.max_seq_len, c.rope_theta, c.rope_scaling, c.options);
}
}  // namespace

Llama::Llama(const LlamaConfig& c)
    : Module("Transformer"),
      freqs_cis(register_buffer("freqs_cis", table(c))),
      config_(c),
      init_generator_(c.seed) {
  Generator* g = &init_generator_;
  tok_embeddings = register_module("tok_embeddings", std::make_shared<Embedding>(c.vocab_size, c.dim, g, c.options));
  layers = register_module("layers", std::make_shared<Module>("ModuleDict"));
  for (int64_t i = 0; i < c.n_layers; ++i)
    blocks.push_back(layers->register_module(std::to_string(i), std::make_shared<TransformerBlock>(i, c, g)));
  norm = register_module("norm", std::make_shared<RMSNorm>(c.dim, c.norm_eps, true, c.options));
  output = register_module("output", std::make_shared<Linear>(c.dim, c.vocab_size, false, g, c.options));
  init_weights();
}

// torchtitan's init_weights: tok_embeddings ~ N(0, 1); wq, wk, wv, w1 ~ N(0, 0.02); wo, w2, w3 ~
// N(0, weight_init_std); output ~ N(0, dim^-1/2); norms ones. torchtitan draws trunc_normal_ with
// bounds +-2 (100 standard deviations at 0.02: no truncation in practice) and the output's with
// bounds +-3 std, which remat draws untruncated (its std is then 1.4% larger).
void Llama::init_weights() {
  Generator* g = &init_generator_;
  init::normal_(tok_embeddings->weight, 0.0, 1.0, g);
  for (const std::shared_ptr<TransformerBlock>& b : blocks) {
    for (Linear* l : {b->attention->wq.get(), b->attention->wk.get(), b->attention->wv.get()})
      init::normal_(l->weight, 0.0, 0.02, g);
    init::normal_(b->attention->wo->weight, 0.0, b->weight_init_std, g);
    init::normal_(b->feed_forward->w1->weight, 0.0, 0.02, g);
    init::normal_(b->feed_forward->w2->weight, 0.0, b->weight_init_std, g);
    init::normal_(b->feed_forward->w3->weight, 0.0, b->weight_init_std, g);
  }
  init::normal_(output->weight, 0.0, 1.0 / std::sqrt(static_cast<double>(config_.dim)), g);
}

LlamaOutput Llama::forward(const Tensor& tokens, const Tensor& targets) const {
  REMAT_CHECK(tokens.defined() && tokens.dim() == 2 && tokens.dtype() == kLong,
              "Llama: tokens must be a Long tensor [B, T], got ", tokens.defined() ? tokens.sizes() : Shape{}, " ",
              tokens.defined() ? toString(tokens.dtype()) : "undefined");
  const int64_t B = tokens.size(0), T = tokens.size(1);
  REMAT_CHECK(T <= config_.max_seq_len, "Llama: sequence of length ", T, " is longer than max_seq_len ",
              config_.max_seq_len);
  DefaultMemoryPhaseGuard phase(MemoryPhase::Forward);  // for the memory tracker
  Tensor h = tok_embeddings->forward(tokens);
  {
    remat::scope s("layers");
    for (size_t i = 0; i < blocks.size(); ++i) {
      const std::shared_ptr<TransformerBlock>& block = blocks[i];
      const Tensor& f = freqs_cis;
      if (checkpointing_.applies_to(static_cast<int64_t>(i)) && autograd::GradMode::is_enabled()) {
        h = checkpoint([block, f](const Tensor& x) { return block->forward(x, f); }, h, checkpointing_.options());
      } else {
        h = block->forward(h, f);
      }
    }
  }
  LlamaOutput out;
  out.logits = output->forward(norm->forward(h));
  if (targets.defined()) {
    REMAT_CHECK(targets.sizes() == tokens.sizes(), "Llama: targets of shape ", targets.sizes(),
                " do not match tokens ", tokens.sizes());
    out.loss = cross_entropy(out.logits.view({B * T, config_.vocab_size}), targets.reshape({B * T}));
  }
  return out;
}

}  // namespace remat::nn
