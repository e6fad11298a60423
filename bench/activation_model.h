// Activation memory of remat's GPT, derived from the shapes (no measurement; no PyTorch
// counterpart). A second, independent account of what a dry run on the Meta device counts:
// tests/bench/activation_model_test.cpp checks that the two agree to the byte. The benchmark
// prints the dry run's figures, and the Korthikanti et al. reference line from here.
//
// Notation: B batch, T sequence, C model width, H heads, V vocabulary, L layers, e bytes per
// element (4 for f32). A = B*T*C*e (one [B, T, C] activation), S = B*H*T*T*e (one attention
// score tensor), N = B*T*4 (one LayerNorm mean or rstd row, always f32), M = T*T (the causal
// mask, one byte per element).
//
// What one block's ops save for backward (remat's derivative rules, in forward order; every
// parameter trains: a rule saves a tensor only for gradients that are needed, so a model with
// frozen weights keeps less than this table says):
//   ln1 native_layer_norm  input x, mean, rstd          A + 2N
//   qkv addmm              ln1's output                 A
//   q @ k^T  bmm           q, k^T: views of qkv's output 2A   (4-D bmm on the strided views, no copies)
//   _masked_softmax        the causal mask, its output  M + S (scores x V's bmm saves the same output)
//   scores x V  bmm        v: a view of qkv's output   A    (the three views keep that [B, T, 3C] alive)
//   proj addmm             the re-laid-out attention    A
//   ln2 native_layer_norm  input h, mean, rstd          A + 2N
//   fc1 addmm              ln2's output                 A
//   gelu                   fc1's output                 4A
//   fc2 addmm              gelu's output                4A
//   -------------------------------------------------------------
//   a block, no checkpointing:           16A + S + 4N + M
//
// A checkpointed block keeps only its input (A); a selective one keeps its input plus the
// outputs its policy caches:
//   save every matmul:                    A + (3A + S + A + A + 4A)       = 10A + S
//     (fc2's output is cached too, but backward never reads it and a rerun stops before fc2, at
//     the last tensor it must refill: SAC drops it at the end of forward)
//   every other linear mm + attention out: A + (3A + A + 4A)              = 9A
//   every matmul but mlp.fc2:              A + (3A + S + A + A + 4A)       = 10A + S
//   Megatron (recompute the core only):    A + (A+2N) + 3A + A + (A+2N) + 4A + 4A = 15A + 4N
// Outside the blocks every strategy keeps the same: ln_f's input, mean and rstd (A + 2N),
// lm_head's input (A), the logits cross_entropy saves (B*T*V*e), the position indices wpe
// saves (8T) and the loss (e).
//
// Korthikanti et al. (Reducing Activation Recomputation in Large Transformer Models, 2022) give
// s*b*h*(34 + 5*a*s/h) bytes per layer for 16-bit activations with dropout; printed beside
// for reference (it counts dropout masks and 2-byte activations, so it is not remat's figure).
#pragma once

#include <cstdint>
#include <string>

#include "engine/core/safe_numerics.h"

namespace remat::bench {

struct ModelShape {
  int64_t batch, seq, embd, heads, vocab, layers;
  int64_t bytes_per_element = 4;
  // "gpt" (nn::GPT, the table above) or "llama" (nn::Llama, torchtitan's Llama 3 block: embd is
  // its dim, heads its n_heads; the closed form above is the GPT's only, the dry run counts both).
  std::string model = "gpt";
  int64_t kv_heads = 0;    // llama: n_kv_heads (0: heads)
  int64_t ffn_hidden = 0;  // llama: the SwiGLU hidden size (0: torchtitan's rule from 4 * embd)

  bool is_llama() const { return model == "llama"; }
  int64_t kv_heads_or_heads() const { return kv_heads > 0 ? kv_heads : heads; }
};

// Every byte count a step of this model reaches (each tensor's, the blocks' activations, the
// parameters with their gradients and AdamW's moments, and their sum) fits in int64: otherwise
// remat::Error names the figure that overflowed (safe_numerics.h), before anything runs, where the
// dry run would wrap it and print negative GiB.
inline void check_model_size(const ModelShape& m) {
  const int64_t B = m.batch, T = m.seq, C = m.embd, H = m.heads, V = m.vocab, L = m.layers, e = m.bytes_per_element;
  const std::string prefix = "the model is too large to count in bytes: ";
  const int64_t A = checked_product(prefix + "A = B*T*C*e (one [B, T, C] activation)", {B, T, C, e});
  const int64_t S = checked_product(prefix + "S = B*H*T*T*e (one attention score tensor)", {B, H, T, T, e});
  const int64_t logits = checked_product(prefix + "B*T*V*e (the logits)", {B, T, V, e});
  int64_t block = 0, weights = 0;
  if (m.is_llama()) {
    // A block keeps at most: its norms' inputs, q, k, v and their rotated and repeated copies, the
    // scores, and the feed-forward's three [B, T, F] tensors; the parameters: wq, wo (C*C), wk, wv
    // (C * kv_heads * C/H), w1, w2, w3 (C*F), the embeddings and the output projection (2*V*C).
    const int64_t F = m.ffn_hidden > 0 ? m.ffn_hidden : C * 3;  // an upper bound of torchtitan's rule
    const int64_t ffn = checked_product(prefix + "B*T*F*e (one feed-forward activation)", {B, T, F, e});
    block = checked_sum(prefix + "16A + S + 4 * B*T*F*e (a block's activations)",
                        {checked_product(prefix + "16A (a block's activations)", {16, A}), S,
                         checked_product(prefix + "4 * B*T*F*e (a block's activations)", {4, ffn})});
    const int64_t kv = checked_product(prefix + "C * kv_heads * C/H", {C, m.kv_heads_or_heads(), C / (H > 0 ? H : 1)});
    const int64_t per_layer = checked_sum(prefix + "2*C*C + 2*C*kv + 3*C*F (a block's parameters)",
                                          {checked_product(prefix + "2*C*C", {2, C, C}), checked_product(prefix + "2*kv", {2, kv}),
                                           checked_product(prefix + "3*C*F", {3, C, F})});
    weights = checked_sum(prefix + "L * (a block's parameters) + 2*V*C (the parameters)",
                          {checked_product(prefix + "L * (a block's parameters)", {L, per_layer}),
                           checked_product(prefix + "2*V*C (the embeddings and the output)", {2, V, C})});
  } else {
    block = checked_sum(prefix + "16A + S (a block's activations)",
                        {checked_product(prefix + "16A (a block's activations)", {16, A}), S});
    weights = checked_sum(prefix + "L*12*C*C + (V+T)*C (the parameters)",
                          {checked_product(prefix + "L*12*C*C (the blocks' parameters)", {L, 12, C, C}),
                           checked_product(prefix + "(V+T)*C (the embeddings)", {checked_sum(prefix + "V+T", {V, T}), C})});
  }
  const int64_t blocks = checked_product(prefix + "L * (a block's activations)", {L, block});
  const int64_t state = checked_product(prefix + "4 * 4 * parameters (parameters, gradients and AdamW's moments, "
                                        "4 bytes each)", {4, 4, weights});
  checked_sum(prefix + "the parameters' state + the activations + the logits", {state, blocks, logits});
}

struct BlockTerms {
  double A, S, N, M;
};

inline BlockTerms terms(const ModelShape& m) {
  const double e = static_cast<double>(m.bytes_per_element);
  return {static_cast<double>(m.batch * m.seq * m.embd) * e,
          static_cast<double>(m.batch * m.heads * m.seq * m.seq) * e,
          static_cast<double>(m.batch * m.seq) * 4.0,
          static_cast<double>(m.seq * m.seq)};
}

// Bytes one block keeps after forward under a strategy (by the table above).
inline double block_bytes(const std::string& strategy, const ModelShape& m, int64_t block_index) {
  BlockTerms t = terms(m);
  const double none = 16 * t.A + t.S + 4 * t.N + t.M;
  if (strategy == "none") return none;
  if (strategy == "full" || strategy == "full-reentrant") return t.A;
  if (strategy == "every2") return block_index % 2 == 0 ? t.A : none;
  if (strategy == "sac-mm") return 10 * t.A + t.S;
  if (strategy == "sac-titan") return 9 * t.A;
  if (strategy == "sac-no-fc2") return 10 * t.A + t.S;
  if (strategy == "sac-megatron") return 15 * t.A + 4 * t.N;
  return -1;
}

inline double outside_blocks_bytes(const ModelShape& m) {
  BlockTerms t = terms(m);
  const double e = static_cast<double>(m.bytes_per_element);
  return 2 * t.A + 2 * t.N + static_cast<double>(m.batch * m.seq * m.vocab) * e + 8.0 * static_cast<double>(m.seq) + e;
}

inline double predicted_activation_bytes(const std::string& strategy, const ModelShape& m) {
  double total = outside_blocks_bytes(m);
  for (int64_t i = 0; i < m.layers; ++i) total += block_bytes(strategy, m, i);
  return total;
}

// s*b*h*(34 + 5*a*s/h) per layer (16-bit activations), times the layer count.
inline double korthikanti_bytes(const ModelShape& m) {
  const double s = static_cast<double>(m.seq), b = static_cast<double>(m.batch), h = static_cast<double>(m.embd);
  const double a = static_cast<double>(m.heads);
  return s * b * h * (34.0 + 5.0 * a * s / h) * static_cast<double>(m.layers);
}

}  // namespace remat::bench
