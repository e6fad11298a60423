// Mirrors torchtitan's models/llama3/model.py: a Llama-family decoder (RMSNorm, rotary position
// embeddings, SwiGLU feed-forward, grouped-query attention), with torchtitan's module names:
//
//   tok_embeddings, layers.<i>.{attention_norm, attention.{wq, wk, wv, inner_attention, wo},
//   ffn_norm, feed_forward.{w1, w2, w3}}, norm, output
//
// so selective-checkpoint policies and traces see "layers.3.attention" and "layers.3.feed_forward".
// Checkpointing wraps whole blocks, as torchtitan's apply_ac does, and is set as the GPT's is:
//
//   nn::Llama model(nn::LlamaConfig::debugmodel());
//   model.set_checkpointing(nn::ActivationCheckpointing::selective(policies::save_matmuls()));
//   nn::LlamaOutput out = model.forward(tokens, targets);   out.loss.backward();
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/embedding.h"
#include "nn/gpt.h"  // ActivationCheckpointing
#include "nn/linear.h"
#include "nn/normalization.h"
#include "ops/sdpa_kernel.h"

namespace remat::nn {

// torchtitan's TransformerModelArgs (the fields a dense Llama 3 uses).
struct LlamaConfig {
  int64_t dim = 4096;
  int64_t n_layers = 32;
  int64_t n_heads = 32;
  int64_t n_kv_heads = 0;  // 0: n_heads (torchtitan's None)
  int64_t vocab_size = 2048;
  int64_t multiple_of = 256;         // the SwiGLU hidden size is rounded up to a multiple of it
  double ffn_dim_multiplier = 0.0;   // 0: none (torchtitan's None)
  int64_t ffn_hidden = 0;            // the SwiGLU hidden size as given; 0: from the two fields above
  double norm_eps = 1e-5;
  double rope_theta = 10000.0;
  // Llama 3.1's RoPE frequency scaling (torchtitan's RoPEScalingArgs: factor 8, low 1, high 4,
  // original context 8192), which torchtitan's Llama 3 flavours apply.
  bool rope_scaling = true;
  // Rows of the rotary buffers: torchtitan's update_from_config sets it to the training sequence length.
  int64_t max_seq_len = 2048;
  bool depth_init = true;  // residual projections' std 0.02 / sqrt(2 (layer + 1)), else / sqrt(2 n_layers)
  uint64_t seed = 1337;
  SDPBackend sdpa_backend = SDPBackend::MATH;  // around each block's scaled_dot_product_attention
  TensorOptions options;                       // dtype and device of the parameters

  int64_t kv_heads() const { return n_kv_heads > 0 ? n_kv_heads : n_heads; }
  int64_t head_dim() const { return dim / n_heads; }
  // FeedForward's hidden size: ffn_hidden, or from 4 * dim as torchtitan computes it.
  int64_t ffn_hidden_dim() const;

  // torchtitan's named flavours.
  static LlamaConfig debugmodel();  // dim 256, 6 layers, 16 heads, vocab 2048, ffn 768, theta 500000
  static LlamaConfig llama3_8b();   // dim 4096, 32 layers, 32 heads, 8 kv heads, ffn 14336, vocab 128256
  static LlamaConfig named(const std::string& name);  // "debugmodel" or "llama3_8b"
};

// The rotary table of precompute_freqs_cis, [end, head_dim / 2] complex: cos + i sin of each
// position times each frequency, computed in f64, then ComplexFloat (torchtitan's complex64), or
// ComplexDouble for an f64 model (options' dtype kDouble).
Tensor precompute_freqs_cis(int64_t head_dim, int64_t end, double theta, bool scaling, TensorOptions options = {});
// The same table's real and imaginary parts, [end, head_dim / 2] each (f32, or f64 for kDouble).
std::pair<Tensor, Tensor> precompute_freqs_cos_sin(int64_t head_dim, int64_t end, double theta, bool scaling,
                                                   TensorOptions options = {});
// apply_rotary_emb on one of q or k, x [B, T, heads, head_dim], as torchtitan writes it:
// view_as_complex of x's consecutive pairs (x.float()), times the first T rows of freqs_cis
// (slice, view [1, T, 1, head_dim / 2]), view_as_real, flatten(3), type_as(x). In f32 (complex64),
// or f64 (complex128) for an f64 x, whose freqs_cis must then be ComplexDouble.
Tensor apply_rotary_emb(const Tensor& x, const Tensor& freqs_cis);
// repeat_kv: x [B, T, n_kv_heads, head_dim] -> [B, T, n_kv_heads * n_rep, head_dim].
Tensor repeat_kv(const Tensor& x, int64_t n_rep);

class LlamaAttention : public Module {
 public:
  LlamaAttention(const LlamaConfig& config, Generator* generator);
  // x [B, T, dim] -> [B, T, dim]; causal scaled_dot_product_attention under scope "inner_attention"
  Tensor forward(const Tensor& x, const Tensor& freqs_cis) const;
  std::shared_ptr<Linear> wq, wk, wv, wo;
  int64_t n_heads, n_kv_heads, n_rep, head_dim;
  SDPBackend sdpa_backend = SDPBackend::MATH;
};

class FeedForward : public Module {
 public:
  FeedForward(int64_t dim, int64_t hidden_dim, Generator* generator, TensorOptions options = {});
  Tensor forward(const Tensor& x) const;  // w2(silu(w1(x)) * w3(x))
  std::shared_ptr<Linear> w1, w2, w3;
};

class TransformerBlock : public Module {
 public:
  TransformerBlock(int64_t layer_id, const LlamaConfig& config, Generator* generator);
  // h = x + attention(attention_norm(x)); h + feed_forward(ffn_norm(h))
  Tensor forward(const Tensor& x, const Tensor& freqs_cis) const;
  std::shared_ptr<RMSNorm> attention_norm, ffn_norm;
  std::shared_ptr<LlamaAttention> attention;
  std::shared_ptr<FeedForward> feed_forward;
  double weight_init_std;
};

struct LlamaOutput {
  Tensor logits;  // [B, T, vocab]
  Tensor loss;    // scalar, when targets were given
};

// torchtitan's Transformer (Llama 3).
class Llama : public Module {
 public:
  explicit Llama(const LlamaConfig& config);

  // tokens: Long [B, T] with T <= max_seq_len; targets: Long [B, T] or undefined.
  LlamaOutput forward(const Tensor& tokens, const Tensor& targets = {}) const;
  void set_checkpointing(ActivationCheckpointing ac) { checkpointing_ = std::move(ac); }
  const ActivationCheckpointing& checkpointing() const { return checkpointing_; }
  const LlamaConfig& config() const { return config_; }

  std::shared_ptr<Embedding> tok_embeddings;
  std::shared_ptr<Module> layers;  // children "0" .. "n_layers-1"
  std::vector<std::shared_ptr<TransformerBlock>> blocks;
  std::shared_ptr<RMSNorm> norm;
  std::shared_ptr<Linear> output;
  Tensor& freqs_cis;  // buffer [max_seq_len, head_dim / 2], ComplexFloat (ComplexDouble for an f64 model)

 private:
  void init_weights();
  LlamaConfig config_;
  Generator init_generator_;
  ActivationCheckpointing checkpointing_;
};

}  // namespace remat::nn
